// Splits `--exec 'PROGRAM ARGS'` into words the way a POSIX shell would for quotes and
// backslashes, without running a shell: no variables, globs, pipes or redirections.
import { UsageError } from "./errors.ts";

export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quote === "'") {
      if (ch === "'") quote = null;
      else word += ch;
    } else if (quote === '"') {
      if (ch === '"') quote = null;
      else if (ch === "\\" && i + 1 < line.length && '"\\$`\n'.includes(line[i + 1])) {
        word += line[++i];
      } else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (ch === "\\" && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (quote !== null) {
    throw new UsageError(
      `Cannot parse --exec ${JSON.stringify(line)}: an unclosed ${quote} quote`,
      {
        hint: "close the quote, or quote the whole --exec value once for your shell",
      },
    );
  }
  if (inWord) words.push(word);
  if (words.length === 0) {
    throw new UsageError("--exec is empty", {
      hint: "give the program to run: --exec 'PROGRAM ARGS'",
    });
  }
  return words;
}
