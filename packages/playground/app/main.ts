/**
 * The playground page: paste a key, upload, browse the account's images, run any image operation
 * from a form generated from the server's OpenAPI document, see the result beside the source,
 * download it, publish it and copy the equivalent curl command. All calls go through
 * `@pixport/client` to this page's own origin; the key stays in `sessionStorage`.
 */
import { createPixportClient, type Image, type PixportClient, type ResponseInfo } from "@pixport/client";
import { $, guarded, setStatus } from "./messages.js";
import { type Field, kindOf, type OperationSpec, operationsOf } from "./openapi-forms.js";

const KEY_STORAGE = "pixport.apiKey";
const PAGE_SIZE = 12;

let client: PixportClient | undefined;
let apiKey = "";
let lastResponse: ResponseInfo | undefined;
let operations: OperationSpec[] = [];
let fields: Field[] = [];
let source: Image | undefined;
let result: Image | undefined;
let cursors: (string | undefined)[] = [undefined];
let pageIndex = 0;
let thumbUrls: string[] = [];
let resultUrl: string | undefined;
let sourceUrl: string | undefined;

const formatBytes = (bytes: number) => `${bytes.toLocaleString("en")} bytes`;

function facts(image: Image, extra = ""): string {
  return `${image.name} · ${image.width} × ${image.height} · ${image.format} · ${formatBytes(image.size)}${extra}`;
}

async function objectUrlOf(image: Image): Promise<string> {
  return URL.createObjectURL(await client!.images.download(image.id));
}

/** Loads one page of thumbnails. */
async function loadImages(): Promise<void> {
  const from = cursors[pageIndex];
  const page = await client!.images.list(
    from === undefined ? { take: PAGE_SIZE } : { take: PAGE_SIZE, from },
  );
  for (const url of thumbUrls) URL.revokeObjectURL(url);
  thumbUrls = [];
  const list = $("images");
  list.replaceChildren();
  for (const image of page.data) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "thumb";
    button.dataset.imageId = image.id;
    button.setAttribute("aria-label", `Use ${image.name} (${image.width} × ${image.height} ${image.format})`);
    const img = document.createElement("img");
    img.alt = "";
    const url = await objectUrlOf(image);
    thumbUrls.push(url);
    img.src = url;
    const caption = document.createElement("span");
    caption.textContent = image.name;
    button.append(img, caption);
    button.addEventListener("click", () => void guarded("Opening", () => selectSource(image)));
    item.append(button);
    list.append(item);
  }
  if (page.data.length === 0) {
    const empty = document.createElement("li");
    empty.textContent = pageIndex === 0 ? "No images yet: upload one." : "No more images.";
    list.append(empty);
  }
  const next = page.links.next === null ? undefined : new URL(page.links.next).searchParams.get("from");
  cursors = cursors.slice(0, pageIndex + 1);
  if (next) cursors.push(next);
  ($("next") as HTMLButtonElement).disabled = !next;
  ($("previous") as HTMLButtonElement).disabled = pageIndex === 0;
}

async function selectSource(image: Image): Promise<void> {
  source = image;
  if (sourceUrl !== undefined) URL.revokeObjectURL(sourceUrl);
  sourceUrl = await objectUrlOf(image);
  ($("source-image") as HTMLImageElement).src = sourceUrl;
  $("source-facts").textContent = `Source: ${facts(image)}`;
  $("work").hidden = false;
  $("result").hidden = true;
  setStatus(`Selected ${image.name}.`);
}

/** Builds the form of one operation from its request schema. */
function renderFields(spec: OperationSpec): void {
  const set = $("fields");
  set.replaceChildren();
  const legend = document.createElement("legend");
  legend.textContent = `Fields of ${spec.route}`;
  set.append(legend);
  $("operation-summary").textContent = spec.summary;
  fields = [];
  const required = new Set(spec.schema.required ?? []);
  for (const [name, raw] of Object.entries(spec.schema.properties ?? {})) {
    const schema = raw.anyOf?.find((each) => each.type !== "null") ?? raw;
    const kind = kindOf(raw);
    const id = `field-${name}`;
    const row = document.createElement("div");
    row.className = "field";
    const label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = required.has(name) ? `${name} (required)` : name;
    let input: Field["input"];
    if (kind === "enum" || kind === "boolean") {
      const select = document.createElement("select");
      const values = kind === "boolean" ? [true, false] : (schema.enum ?? []);
      const unset = document.createElement("option");
      unset.value = "";
      unset.textContent = schema.default === undefined ? "(not set)" : `(default: ${String(schema.default)})`;
      select.append(unset);
      for (const value of values) {
        const option = document.createElement("option");
        option.value = String(value);
        option.textContent = String(value);
        select.append(option);
      }
      input = select;
    } else if (kind === "json") {
      const area = document.createElement("textarea");
      area.rows = 3;
      area.placeholder = "JSON";
      input = area;
    } else {
      const field = document.createElement("input");
      if (kind === "number" || kind === "integer") {
        field.type = "number";
        field.step = kind === "integer" ? "1" : "any";
        field.inputMode = "decimal";
      } else {
        field.type = "text";
        if (schema.maxLength !== undefined) field.maxLength = schema.maxLength;
      }
      // Bounds are shown, not enforced by the browser: the server's 422 is the playground's lesson.
      const hints = [
        schema.minimum !== undefined ? `min ${schema.minimum}` : "",
        schema.maximum !== undefined ? `max ${schema.maximum}` : "",
        schema.default !== undefined ? `default ${String(schema.default)}` : "",
      ].filter(Boolean);
      field.placeholder = hints.join(", ");
      input = field;
    }
    input.id = id;
    input.name = name;
    row.append(label, input);
    if (schema.description !== undefined) {
      const hint = document.createElement("small");
      hint.id = `${id}-hint`;
      hint.textContent = schema.description;
      input.setAttribute("aria-describedby", hint.id);
      row.append(hint);
    }
    set.append(row);
    fields.push({ name, kind, input });
  }
}

/** The body the form describes; unset fields are left out (the server applies its defaults). */
function bodyOfForm(): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const field of fields) {
    const value = field.input.value.trim();
    if (value === "") continue;
    if (field.kind === "number" || field.kind === "integer") body[field.name] = Number(value);
    else if (field.kind === "boolean") body[field.name] = value === "true";
    else if (field.kind === "json") {
      try {
        body[field.name] = JSON.parse(value);
      } catch {
        throw new Error(`${field.name} must be JSON, for example [{"op": "resize", "width": 200}]`);
      }
    } else body[field.name] = value;
  }
  return body;
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

function curlOf(spec: OperationSpec, imageId: string, body: Record<string, unknown>): string {
  return [
    `curl -X POST ${shellQuote(`${location.origin}/v1/images/${imageId}/${spec.route}`)}`,
    `  -H ${shellQuote(`x-api-key: ${apiKey}`)}`,
    "  -H 'content-type: application/json'",
    `  -d ${shellQuote(JSON.stringify(body))}`,
  ].join(" \\\n");
}

function isImage(value: unknown): value is Image {
  return typeof value === "object" && value !== null && "id" in value && "width" in value;
}

async function runOperation(): Promise<void> {
  const spec = operations.find((each) => each.route === ($("operation") as HTMLSelectElement).value);
  if (spec === undefined || source === undefined) return;
  const body = bodyOfForm();
  ($("curl") as HTMLTextAreaElement).value = curlOf(spec, source.id, body);
  const run = client!.images[spec.method] as (id: string, body: unknown) => Promise<unknown>;
  const answer = await run(source.id, body);
  const usage = lastResponse?.usage === undefined ? "" : ` · usage ${lastResponse.usage}`;
  const image = $("result-image") as HTMLImageElement;
  const json = $("result-json");
  if (isImage(answer)) {
    result = answer;
    if (resultUrl !== undefined) URL.revokeObjectURL(resultUrl);
    const blob = await client!.images.download(answer.id);
    resultUrl = URL.createObjectURL(blob);
    await new Promise<void>((resolve) => {
      image.onload = () => resolve();
      image.onerror = () => resolve();
      image.src = resultUrl!;
    });
    image.hidden = false;
    image.dataset.imageId = answer.id;
    json.hidden = true;
    $("result-facts").textContent = `Result: ${facts(answer, usage)}`;
    const download = $("download") as HTMLAnchorElement;
    download.href = resultUrl;
    download.download = `${answer.name}.${answer.format === "jpeg" ? "jpg" : answer.format}`;
    $("result").querySelector<HTMLElement>(".actions")!.hidden = false;
    showPublic(answer);
    // The new image is the newest: show it in the list when the first page is on screen.
    if (pageIndex === 0) await loadImages();
  } else {
    result = undefined;
    image.hidden = true;
    json.hidden = false;
    json.textContent = JSON.stringify(answer, null, 2);
    $("result-facts").textContent = `Result of ${spec.route}${usage}`;
    $("result").querySelector<HTMLElement>(".actions")!.hidden = true;
    $("public").hidden = true;
  }
  $("result").hidden = false;
  setStatus(`${spec.route} done.`);
}

function showPublic(image: Image): void {
  const link = $("public-link") as HTMLAnchorElement;
  $("public").hidden = image.url === null;
  link.href = image.url ?? "";
  link.textContent = image.url ?? "";
  ($("publish") as HTMLButtonElement).disabled = image.url !== null;
  ($("unpublish") as HTMLButtonElement).disabled = image.url === null;
}

async function upload(file: File): Promise<void> {
  const typed = ($("upload-name") as HTMLInputElement).value.trim();
  const name = (typed || file.name.replace(/\.[^.]+$/, "") || "image").slice(0, 30);
  const image = await client!.images.upload({ name, image: file });
  ($("upload-name") as HTMLInputElement).value = "";
  pageIndex = 0;
  cursors = [undefined];
  await loadImages();
  await selectSource(image);
  setStatus(`Uploaded ${image.name}.`);
}

async function start(key: string): Promise<void> {
  apiKey = key;
  client = createPixportClient({
    baseUrl: location.origin,
    apiKey: key,
    onResponse: (info) => {
      lastResponse = info;
    },
  });
  const document = await client.openapi();
  operations = operationsOf(document);
  const select = $("operation") as HTMLSelectElement;
  select.replaceChildren(
    ...operations.map((spec) => {
      const option = window.document.createElement("option");
      option.value = spec.route;
      option.textContent = spec.route;
      return option;
    }),
  );
  const resize = operations.find((spec) => spec.route === "resize") ?? operations[0];
  if (resize !== undefined) {
    select.value = resize.route;
    renderFields(resize);
  }
  pageIndex = 0;
  cursors = [undefined];
  await loadImages();
  sessionStorage.setItem(KEY_STORAGE, key);
  $("main").hidden = false;
  setStatus("Key accepted.");
}

function wire(): void {
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = ($("key") as HTMLInputElement).value.trim();
    void guarded("Checking the key", () => start(key));
  });
  $("file").addEventListener("change", () => {
    const file = ($("file") as HTMLInputElement).files?.[0];
    if (file !== undefined) void guarded("Uploading", () => upload(file));
  });
  const drop = $("drop");
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    const file = event.dataTransfer?.files[0];
    if (file !== undefined) void guarded("Uploading", () => upload(file));
  });
  $("previous").addEventListener("click", () => {
    pageIndex = Math.max(0, pageIndex - 1);
    void guarded("Loading", loadImages);
  });
  $("next").addEventListener("click", () => {
    pageIndex += 1;
    void guarded("Loading", loadImages);
  });
  $("refresh").addEventListener("click", () => void guarded("Loading", loadImages));
  $("operation").addEventListener("change", () => {
    const spec = operations.find((each) => each.route === ($("operation") as HTMLSelectElement).value);
    if (spec !== undefined) renderFields(spec);
  });
  $("operation-form").addEventListener("submit", (event) => {
    event.preventDefault();
    void guarded("Running", runOperation);
  });
  $("publish").addEventListener("click", () =>
    guarded("Publishing", async () => {
      if (result === undefined) return;
      result = await client!.images.publish(result.id);
      showPublic(result);
      setStatus("Published.");
    }),
  );
  $("unpublish").addEventListener("click", () =>
    guarded("Unpublishing", async () => {
      if (result === undefined) return;
      result = await client!.images.unpublish(result.id);
      showPublic(result);
      setStatus("Unpublished.");
    }),
  );
  $("copy-curl").addEventListener("click", () => {
    const area = $("curl") as HTMLTextAreaElement;
    area.select();
    void navigator.clipboard?.writeText(area.value).then(
      () => setStatus("Copied the curl command."),
      () => setStatus("Select the command and copy it (the browser refused the clipboard)."),
    );
  });
  const saved = sessionStorage.getItem(KEY_STORAGE);
  if (saved) {
    ($("key") as HTMLInputElement).value = saved;
    void guarded("Checking the key", () => start(saved));
  }
}

wire();
