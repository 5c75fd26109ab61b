/** The page's status line and error box. */
import { PixportApiError } from "@pixport/client";

export const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

export function setStatus(text: string): void {
  $("status").textContent = text;
}

export function clearError(): void {
  const box = $("error");
  box.hidden = true;
  box.replaceChildren();
}

/** Shows an error with its message and, for a 422, every failing field. */
export function showError(error: unknown): void {
  const box = $("error");
  box.replaceChildren();
  const title = document.createElement("p");
  const list = document.createElement("ul");
  if (error instanceof PixportApiError) {
    title.textContent = `${error.status} ${error.title ?? "Error"}${error.code ? ` (${error.code})` : ""}: ${error.message}`;
    for (const each of error.errors ?? []) {
      const item = document.createElement("li");
      item.textContent = each;
      list.append(item);
    }
  } else {
    title.textContent = error instanceof Error ? error.message : String(error);
  }
  box.append(title);
  if (list.childElementCount > 0) box.append(list);
  box.hidden = false;
  setStatus("");
}

/** Runs an action with errors shown on the page instead of lost in the console. */
export async function guarded(label: string, action: () => Promise<void>): Promise<void> {
  clearError();
  setStatus(`${label}…`);
  try {
    await action();
  } catch (error) {
    showError(error);
  }
}
