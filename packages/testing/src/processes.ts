import { readdirSync, readFileSync } from "node:fs";

/**
 * The live child processes of `parent` (this process by default) whose command name is `name`
 * and/or whose command line contains `cmdline`, read from `/proc` (Linux; `ps` may be missing on
 * a minimal machine). A process that exits while the list is read is left out.
 */
export function childProcesses(match: { name?: string; cmdline?: string }, parent = process.pid): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // The command name is in parentheses and may hold spaces; the fields after it are plain.
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== parent) continue;
      if (match.name !== undefined && name !== match.name) continue;
      if (
        match.cmdline !== undefined &&
        !readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(match.cmdline)
      )
        continue;
      found.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}
