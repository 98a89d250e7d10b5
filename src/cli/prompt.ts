/// <reference types="node" />
/**
 * Lines typed at the terminal: the interactive chat session's messages and the answers to
 * `Approve? [y/N]`. One readline interface for the whole session, so a prompt never loses a line
 * typed ahead. In raw mode Ctrl-C reaches readline instead of the process: `onInterrupt` decides
 * (stop the run being streamed, or end the session).
 */
import { createInterface, type Interface } from "node:readline";

export interface Terminal {
  /** Writes the question and resolves with the next line, or undefined at end of input (Ctrl-D). */
  ask(question: string): Promise<string | undefined>;
  /** What Ctrl-C does; by default it ends input (pending and later asks resolve undefined). */
  onInterrupt(handler: (() => void) | undefined): void;
  close(): void;
}

export function openTerminal(): Terminal {
  const rl: Interface = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
  const lines: string[] = [];
  let waiting: ((line: string | undefined) => void) | undefined;
  let closed = false;
  let interrupt: (() => void) | undefined;
  rl.on("line", (line) => {
    if (waiting) {
      const w = waiting;
      waiting = undefined;
      w(line);
    } else lines.push(line);
  });
  rl.on("close", () => {
    closed = true;
    waiting?.(undefined);
    waiting = undefined;
  });
  rl.on("SIGINT", () => {
    if (interrupt && !waiting) return interrupt();
    process.stdout.write("\n");
    rl.close();
  });
  return {
    ask(question) {
      if (lines.length > 0) {
        process.stdout.write(`${question}${lines[0]}\n`);
        return Promise.resolve(lines.shift());
      }
      if (closed) return Promise.resolve(undefined);
      rl.setPrompt(question);
      rl.prompt();
      return new Promise((resolve) => (waiting = resolve));
    },
    onInterrupt(handler) {
      interrupt = handler;
    },
    close() {
      rl.close();
    },
  };
}
