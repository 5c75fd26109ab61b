import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";

/**
 * glibc's malloc settings a resident tesseract starts with: a fixed mmap threshold (128 KiB), so
 * a page's large buffers (tesseract's binarised and scaled copies of it) are mapped and unmapped
 * with the page instead of staying in the heap at the largest page's size (glibc's adaptive
 * threshold grows to 32 MB and keeps them). Measured on the document suite's pages, one resident
 * process: 41-63 MB between pages against 64-85 MB, the same peak and the same time.
 */
export const RESIDENT_TUNABLES = ["glibc.malloc.mmap_threshold=131072"];

/**
 * The environment of a resident tesseract: the host's, one OpenMP thread, and
 * {@link RESIDENT_TUNABLES} added to `GLIBC_TUNABLES` unless the host sets them itself.
 */
export function residentEnv(host: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const tunables = host.GLIBC_TUNABLES ?? "";
  const added = RESIDENT_TUNABLES.filter(
    (tunable) => !tunables.includes(tunable.slice(0, tunable.indexOf("=") + 1)),
  );
  return {
    ...host,
    OMP_THREAD_LIMIT: "1",
    ...(added.length === 0
      ? {}
      : { GLIBC_TUNABLES: [tunables, ...added].filter((part) => part !== "").join(":") }),
  };
}

/** How long a resident tesseract waits for its next page before it exits (its memory goes back). */
export const RESIDENT_IDLE_MS = 30_000;

/**
 * One long-lived native `tesseract` that reads page after page with its model loaded once
 * (loading it costs about 100 ms, as much as recognising a short page). Tesseract's own file-list
 * streaming (`-c stream_filelist=1`) reads image paths from its stdin one line at a time and its
 * hOCR renderer flushes each page as soon as it is recognised, so a page is: write its PGM into
 * `scratch`, write the path to stdin, read stdout up to the page's closing `</div>`. LSTM engine
 * (no learning carried from page to page: a page reads the same whatever came before, which the
 * tests check), one OpenMP thread (`OMP_THREAD_LIMIT=1`: concurrency comes from the extractor's
 * `workers`), fixed page segmentation mode. One page at a time. A page whose caller gave up
 * (`signal`) has its process killed, and a dead process is started again by the next page; the
 * process ends on its own after {@link RESIDENT_IDLE_MS} without a page, and while idle it does
 * not keep Node's event loop alive.
 */
export class ResidentTesseract {
  private child: ChildProcessWithoutNullStreams | undefined;
  private output = "";
  private errors = "";
  private pending: { resolve: (hocr: string) => void; reject: (error: Error) => void } | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private reading = false;
  private pages = 0;
  private static instances = 0;
  private readonly id = ++ResidentTesseract.instances;

  constructor(
    private readonly options: {
      binary: string;
      tessdata: string;
      language: string;
      psm: number;
      /** A private directory the page files are written to (and removed from). */
      scratch: string;
      idleMs?: number;
    },
  ) {}

  /** The pid of the running process, if one runs (for tests). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * The hOCR of one image (PGM or anything Leptonica reads; given whole or as consecutive parts,
   * such as a PGM header and the pixels, written one after the other). With `zones`, a UNLV zone file is
   * written beside it: tesseract then reads each zone as one block of text (`--psm 6`) instead of
   * segmenting the image, whatever the process's own mode (for modes 4 and up; see
   * {@link formatZones}).
   */
  async read(
    image: Uint8Array | readonly Uint8Array[],
    signal: AbortSignal,
    zones?: readonly Zone[],
  ): Promise<string> {
    signal.throwIfAborted();
    if (this.reading) throw new Error("a resident tesseract reads one page at a time");
    this.reading = true;
    clearTimeout(this.idleTimer);
    const base = path.join(this.options.scratch, `page-${this.id}-${++this.pages}`);
    const file = `${base}.pgm`;
    const zoneFile = zones === undefined ? undefined : `${base}.uzn`;
    let onAbort: (() => void) | undefined;
    try {
      if (zoneFile !== undefined && zones !== undefined)
        await writeFile(zoneFile, formatZones(zones), { mode: 0o600 });
      // writeFile writes an iterable's chunks one after the other: no joined copy is made.
      await writeFile(file, image instanceof Uint8Array ? image : image.values(), { mode: 0o600 });
      signal.throwIfAborted();
      const child = this.child ?? this.start();
      this.hold(child, true);
      const page = new Promise<string>((resolve, reject) => {
        this.pending = { resolve, reject };
      });
      onAbort = () => {
        this.fail(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
        this.kill();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      child.stdin.write(`${file}\n`);
      return await page;
    } finally {
      if (onAbort !== undefined) signal.removeEventListener("abort", onAbort);
      this.pending = undefined;
      await rm(file, { force: true });
      if (zoneFile !== undefined) await rm(zoneFile, { force: true });
      this.reading = false;
      const child = this.child;
      if (child !== undefined) {
        this.hold(child, false);
        // Forgotten first, so a page that comes while it winds down starts a new process.
        this.idleTimer = setTimeout(() => {
          if (this.child !== child) return;
          this.child = undefined;
          child.stdin.end();
        }, this.options.idleMs ?? RESIDENT_IDLE_MS);
        this.idleTimer.unref();
      }
    }
  }

  /** Kills the process (a page being read is rejected). */
  close(): void {
    clearTimeout(this.idleTimer);
    this.fail(new Error("closed"));
    this.kill();
  }

  /** Forgets the process at once (the next page starts another), then kills it. */
  private kill(): void {
    const child = this.child;
    this.child = undefined;
    child?.kill("SIGKILL");
  }

  private start(): ChildProcessWithoutNullStreams {
    const { binary, tessdata, language, psm } = this.options;
    const child = spawn(
      binary,
      [
        "--tessdata-dir",
        tessdata,
        "stdin",
        "stdout",
        "-l",
        language,
        "--oem",
        "1",
        "--psm",
        String(psm),
        "-c",
        "stream_filelist=1",
        "-c",
        "preserve_interword_spaces=0",
        "-c",
        "tessedit_create_hocr=1",
      ],
      { env: residentEnv(), stdio: ["pipe", "pipe", "pipe"] },
    );
    this.child = child;
    this.output = "";
    this.errors = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      this.output += chunk;
      const start = this.output.indexOf("<div class='ocr_page'");
      if (start < 0) return;
      const end = this.output.indexOf(PAGE_END, start);
      if (end < 0) return;
      const page = this.output.slice(start, end + PAGE_END.length);
      this.output = this.output.slice(end + PAGE_END.length);
      const pending = this.pending;
      this.pending = undefined;
      pending?.resolve(page);
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      this.errors = (this.errors + chunk).slice(-2048);
    });
    // A process that dies closes its stdin; its exit answers that.
    child.stdin.on("error", () => undefined);
    child.once("error", (error) => this.ended(child, error));
    child.once("close", (code, killedBy) => {
      const why = this.errors
        .split("\n")
        .filter((line) => line !== "" && !/^(Page \d+ :|Estimating resolution|UZN file )/.test(line))
        .join("; ");
      this.ended(
        child,
        new Error(`tesseract exited (${killedBy ?? `code ${code}`})${why ? `: ${why.slice(-300)}` : ""}`),
      );
    });
    return child;
  }

  private ended(child: ChildProcessWithoutNullStreams, error: Error): void {
    if (this.child !== child) return;
    this.child = undefined;
    clearTimeout(this.idleTimer);
    this.fail(error);
  }

  private fail(error: Error): void {
    const pending = this.pending;
    this.pending = undefined;
    pending?.reject(error);
  }

  /** An idle process (and its pipes) does not keep the event loop alive; a reading one does. */
  private hold(child: ChildProcessWithoutNullStreams, held: boolean): void {
    for (const handle of [child, child.stdin, child.stdout, child.stderr] as unknown as {
      ref?: () => void;
      unref?: () => void;
    }[]) {
      if (held) handle.ref?.();
      else handle.unref?.();
    }
  }
}

/** A rectangle of an image, in pixels from its top-left corner. */
export interface Zone {
  left: number;
  top: number;
  width: number;
  height: number;
}

/**
 * A UNLV zone file (`.uzn`: one `left top width height type` line per zone, top-down pixels), the
 * layout tesseract takes instead of its own page segmentation when the file sits beside the image
 * under the same base name. Tesseract looks for one only when its mode does not find columns
 * (`--psm` 4 and up), and reads each zone as a single block of text, as `--psm 6` would: this is
 * how one resident process in mode 4 reads pages (tesseract's block finding, no column split,
 * which the layout step does from word boxes) and table regions (each one block, so a lone short
 * cell is kept) without a second process for the other mode.
 */
export function formatZones(zones: readonly Zone[]): string {
  return zones
    .map(
      (zone) =>
        `${Math.round(zone.left)} ${Math.round(zone.top)} ${Math.round(zone.width)} ${Math.round(zone.height)} Text\n`,
    )
    .join("");
}

/** How tesseract's hOCR renderer closes a page (its blocks close with three spaces). */
const PAGE_END = "\n  </div>\n";
