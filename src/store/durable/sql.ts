/**
 * The SQLite this adapter writes to: the shape of a Durable Object's `ctx.storage.sql` (and
 * `transactionSync`), declared here so the tables stay web-standard code that knows nothing of
 * workerd. Every statement is synchronous: a Durable Object runs one event at a time, so a
 * method made only of statements, with no `await` between them, is atomic by construction, which
 * is how this adapter keeps the Store port's atomicity promises (decideApproval, markResumed,
 * createThread, ...). `transaction` also rolls back the statements already run when one throws.
 */

export type SqlValue = string | number | null;
export type SqlRow = Record<string, SqlValue>;

export interface SqlCursor<T extends SqlRow> {
  toArray(): T[];
}

export interface Sqlite {
  exec<T extends SqlRow = SqlRow>(query: string, ...bindings: SqlValue[]): SqlCursor<T>;
  transaction<T>(work: () => T): T;
}

/** The first row of a statement, or undefined. */
export function first<T extends SqlRow>(db: Sqlite, query: string, ...bindings: SqlValue[]): T | undefined {
  return db.exec<T>(query, ...bindings).toArray()[0];
}

/** A JSON column read back. */
export function parsed<T>(text: SqlValue): T {
  return JSON.parse(String(text)) as T;
}

/** A statement's text and its bindings, in order. */
export interface Statement {
  readonly sql: string;
  readonly bindings: SqlValue[];
}

/**
 * The conditions of the filters given (`[condition with one ?, value]`; an undefined value leaves
 * its filter out), joined with AND, or `1` when none is given. SQLite plans a statement without
 * looking at its bindings, so a filter written `(?1 IS NULL OR col = ?1)` never uses an index on
 * `col`; one left out, or written `col = ?`, does.
 */
export function givenFilters(filters: readonly (readonly [string, SqlValue | undefined])[]): Statement {
  const conditions: string[] = [];
  const bindings: SqlValue[] = [];
  for (const [condition, value] of filters) {
    if (value === undefined) continue;
    conditions.push(condition);
    bindings.push(value);
  }
  return { sql: conditions.length === 0 ? "1" : conditions.join(" AND "), bindings };
}
