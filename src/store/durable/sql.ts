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
