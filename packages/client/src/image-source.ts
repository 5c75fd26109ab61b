/** Image bytes the upload takes: browser `Blob`/`File`, bytes, or a stream (Node `Readable`, web `ReadableStream`). */
export type ImageSource =
  | Blob
  | Uint8Array
  | ArrayBuffer
  | AsyncIterable<Uint8Array>
  | ReadableStream<Uint8Array>;

/** Reads a stream or async iterable of bytes into one Blob (multipart needs the whole part). */
export async function toBlob(source: ImageSource): Promise<Blob> {
  if (source instanceof Blob) return source;
  if (source instanceof ArrayBuffer) return new Blob([source]);
  if (source instanceof Uint8Array) return new Blob([source as Uint8Array<ArrayBuffer>]);
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  if (typeof (source as ReadableStream<Uint8Array>).getReader === "function") {
    const reader = (source as ReadableStream<Uint8Array>).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value as Uint8Array<ArrayBuffer>);
    }
  } else {
    for await (const chunk of source as AsyncIterable<Uint8Array>) {
      chunks.push(
        (typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk) as Uint8Array<ArrayBuffer>,
      );
    }
  }
  return new Blob(chunks);
}
