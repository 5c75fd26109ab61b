import { statSync } from "node:fs";
import path from "node:path";
import { ErrorCodes, IMAGE_FORMATS, ImagePipelineError, type ImageRecord, type Logger } from "@pixport/core";
import { z } from "zod";
import { type FsPromises, isTemporaryFileName, writeFileAtomic } from "./atomic-write.js";
import { isMissing } from "./fs-errors.js";
import { addToIndex, emptyIndex, type Index, removeFromIndex } from "./image-record-index.js";
import { defaultFs } from "./options.js";

/**
 * Ids that are safe as file names on every filesystem; pixport's ids (`image_` + 24 letters or
 * digits) match. Other ids cannot be stored and are never found.
 */
export const RECORD_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export const recordSchema = z.object({
  id: z.string().regex(RECORD_ID_PATTERN),
  accountId: z.string(),
  stage: z.enum(["test", "live"]),
  name: z.string(),
  format: z.enum(IMAGE_FORMATS),
  width: z.number(),
  height: z.number(),
  size: z.number(),
  createdAt: z.string(),
  blobKey: z.string(),
  url: z.string().nullable(),
  frames: z.number().int().positive().optional(),
  facts: z
    .object({
      hasAlpha: z.boolean(),
      frames: z.number().int().positive(),
      dominantColor: z.string(),
      thumbhash: z.string().nullable(),
      blurhash: z.string().nullable(),
    })
    .optional(),
});

const RECORD_SUFFIX = ".json";
/** How many record files the initial load reads at once. */
const LOAD_CONCURRENCY = 32;

/** What {@link ImageRecordFiles} needs from the repository's options. */
export interface ImageRecordFilesOptions {
  root: string;
  /** The injected `fs`, or undefined for the real module. */
  fs: FsPromises | undefined;
  changeLogMaxBytes: number;
  logger: Logger;
}

/**
 * The record files (`<root>/records/<id>.json`) and the change log (`<root>/changes.log`) of one
 * repository, with the in-memory index this process builds from them and keeps up to date. Not
 * safe for concurrent use: the repository calls it under its index lock.
 */
export class ImageRecordFiles {
  readonly recordsDirectory: string;
  readonly fs: FsPromises;
  private readonly changeLogPath: string;
  private readonly statChangeLog: () => Promise<{ ino: number; size: number }>;
  private readonly changeLogMaxBytes: number;
  private readonly logger: Logger;
  private index: Index | undefined;
  /** Identity and read position of the change log this process follows. */
  private changeLog = { inode: -1, offset: 0 };

  constructor(options: ImageRecordFilesOptions) {
    this.recordsDirectory = path.join(options.root, "records");
    const changeLogPath = path.join(options.root, "changes.log");
    this.changeLogPath = changeLogPath;
    const fs = options.fs ?? defaultFs;
    this.fs = fs;
    this.changeLogMaxBytes = options.changeLogMaxBytes;
    this.logger = options.logger;
    // Every read checks the change log's size, so another process's writes are seen at once. On the
    // real filesystem that check is a synchronous stat: a few microseconds on a local disk, where the
    // promise API's thread-pool round trip cost about 15 % of a delivered variant's CPU. (An injected
    // `fs`, for fault tests, keeps its own stat.)
    this.statChangeLog =
      options.fs === undefined
        ? async () => {
            const info = statSync(changeLogPath, { throwIfNoEntry: false });
            if (info === undefined)
              throw Object.assign(new Error(`ENOENT: ${changeLogPath}`), { code: "ENOENT" });
            return info;
          }
        : () => fs.stat(changeLogPath);
  }

  recordPath(id: string): string {
    return path.join(this.recordsDirectory, `${id}${RECORD_SUFFIX}`);
  }

  async readRecord(id: string): Promise<ImageRecord | null> {
    let text: string;
    try {
      text = await this.fs.readFile(this.recordPath(id), "utf8");
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    let parsedRecord: ImageRecord | undefined;
    let cause: unknown;
    try {
      const result = recordSchema.safeParse(JSON.parse(text));
      if (result.success && result.data.id === id) parsedRecord = result.data;
      else cause = result.error;
    } catch (error) {
      cause = error;
    }
    if (parsedRecord === undefined) {
      throw new ImagePipelineError(ErrorCodes.INTERNAL, `The record file of image ${id} is corrupt.`, {
        cause,
      });
    }
    return parsedRecord;
  }

  /** Builds the index from every record file. The change log position is taken first, so nothing written meanwhile is missed. */
  async load(): Promise<Index> {
    await this.fs.mkdir(this.recordsDirectory, { recursive: true });
    const handle = await this.fs.open(this.changeLogPath, "a");
    try {
      const info = await handle.stat();
      this.changeLog = { inode: info.ino, offset: info.size };
    } finally {
      await handle.close();
    }
    const ids = (await this.fs.readdir(this.recordsDirectory))
      .filter((name) => name.endsWith(RECORD_SUFFIX) && !isTemporaryFileName(name))
      .map((name) => name.slice(0, -RECORD_SUFFIX.length))
      .filter((id) => RECORD_ID_PATTERN.test(id));
    const fresh = emptyIndex();
    for (let start = 0; start < ids.length; start += LOAD_CONCURRENCY) {
      const batch = ids.slice(start, start + LOAD_CONCURRENCY);
      const records = await Promise.all(
        batch.map((id) =>
          this.readRecord(id).catch((error: unknown) => {
            // One damaged file must not take every other image down with it.
            this.logger.warn?.("Skipping an unreadable image record file.", { id, error });
            return null;
          }),
        ),
      );
      for (const record of records) if (record !== null) addToIndex(fresh, record);
    }
    this.index = fresh;
    return fresh;
  }

  /** Brings the index up to date with writes of other processes (see the change log). */
  async refresh(): Promise<Index> {
    if (this.index === undefined) return this.load();
    let info: { ino: number; size: number };
    try {
      info = await this.statChangeLog();
    } catch (error) {
      if (!isMissing(error)) throw error;
      return this.load();
    }
    if (info.ino !== this.changeLog.inode || info.size < this.changeLog.offset) return this.load();
    if (info.size === this.changeLog.offset) return this.index;
    const handle = await this.fs.open(this.changeLogPath, "r");
    let text: string;
    try {
      const buffer = Buffer.alloc(info.size - this.changeLog.offset);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, this.changeLog.offset);
      text = buffer.subarray(0, bytesRead).toString("utf8");
    } finally {
      await handle.close();
    }
    // Only complete lines; a line still being appended is read next time.
    const complete = text.slice(0, text.lastIndexOf("\n") + 1);
    const current = this.index;
    for (const id of new Set(complete.split("\n"))) {
      if (!RECORD_ID_PATTERN.test(id)) continue;
      const record = await this.readRecord(id);
      if (record === null) removeFromIndex(current, id);
      else addToIndex(current, record);
    }
    this.changeLog.offset += Buffer.byteLength(complete);
    return current;
  }

  /** Tells other processes that `id` changed, and rolls the log over when it grew too large. */
  async announce(id: string): Promise<void> {
    // The leading newline ends a line that a crashed writer may have left unfinished.
    const line = `\n${id}\n`;
    try {
      const handle = await this.fs.open(this.changeLogPath, "a");
      try {
        await handle.writeFile(line);
        const info = await handle.stat();
        // Skip our own line when nobody else appended since our last read.
        if (info.ino === this.changeLog.inode && info.size === this.changeLog.offset + line.length) {
          this.changeLog.offset = info.size;
        }
      } finally {
        await handle.close();
      }
      if (this.changeLog.offset > this.changeLogMaxBytes) {
        await writeFileAtomic(this.fs, this.changeLogPath, "");
        // Lines other processes appended to the old log may not have been read: rebuild.
        await this.load();
      }
    } catch (error) {
      // The record itself is durable; only other processes' freshness suffers until they reload.
      this.logger.warn?.("Could not append to the image change log.", { id, error });
    }
  }
}
