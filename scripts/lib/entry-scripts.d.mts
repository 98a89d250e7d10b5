export declare const ENTRY_SCRIPTS: { readonly node: "start"; readonly bun: "start:bun"; readonly deno: "start:deno" };
export declare function scriptCommand(root: string, script: string): { command: string; args: string[]; env: Record<string, string> };
