/**
 * The part of workerd's `cloudflare:workers` module the Durable Objects here use. Declared by
 * hand: @cloudflare/workers-types declares its own Request, Response and fetch globals, which
 * clash with the DOM library the whole of src/ compiles against.
 */
declare module "cloudflare:workers" {
  export interface SqlStorageCursor {
    toArray(): Record<string, string | number | null>[];
  }

  export interface DurableObjectStorage {
    get<T>(key: string): Promise<T | undefined>;
    put<T>(key: string, value: T): Promise<void>;
    deleteAll(): Promise<void>;
    setAlarm(scheduledTime: number): Promise<void>;
    readonly sql: { exec(query: string, ...bindings: (string | number | null)[]): SqlStorageCursor };
    transactionSync<T>(work: () => T): T;
  }

  export interface DurableObjectState {
    readonly storage: DurableObjectStorage;
    /** No other event reaches the object until `work` settles (outgoing calls included). */
    blockConcurrencyWhile<T>(work: () => Promise<T>): Promise<T>;
  }

  export abstract class DurableObject<Env = unknown> {
    protected readonly ctx: DurableObjectState;
    protected readonly env: Env;
    constructor(ctx: DurableObjectState, env: Env);
  }
}
