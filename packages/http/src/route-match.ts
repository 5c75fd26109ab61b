import { mediaType } from "./body.js";
import type { Route } from "./routes/route.js";
import type { HttpRequest } from "./types.js";

/** A route with its path template turned into a pattern and the names of its parameters. */
export interface CompiledRoute {
  route: Route;
  pattern: RegExp;
  names: string[];
  /** The parameter that takes the rest of the path as sent (see `Route.restParameter`). */
  rest: string | undefined;
}

export function compile(route: Route): CompiledRoute {
  const names: string[] = [];
  const source = route.path
    .replace(/[.*+?^$()|[\]\\]/g, "\\$&")
    .replace(/\{([a-z_]+)\}/g, (_, name: string) => {
      names.push(name);
      return name === route.restParameter ? "(.+)" : "([^/]+)";
    });
  return { route, pattern: new RegExp(`^${source}/?$`), names, rest: route.restParameter };
}

/** The route a request matched, or why none did (405 lists the methods the path allows). */
export type Match =
  | { kind: "route"; route: Route; params: Record<string, string> }
  | { kind: "not-found" }
  | { kind: "method-not-allowed"; allow: string[] };

export function matchRoute(compiled: readonly CompiledRoute[], request: HttpRequest): Match {
  const allow = new Set<string>();
  const type = mediaType(request);
  for (const { route, pattern, names, rest } of compiled) {
    const found = pattern.exec(request.path);
    if (found === null) continue;
    allow.add(route.method);
    // HEAD is GET without the body (the handler drops it).
    const method = request.method.toUpperCase() === "HEAD" ? "GET" : request.method.toUpperCase();
    if (route.method !== method) continue;
    if (route.accepts !== undefined && !route.accepts(type)) continue;
    const params: Record<string, string> = {};
    names.forEach((name, index) => {
      const value = found[index + 1] ?? "";
      params[name] = name === rest ? value : safeDecode(value);
    });
    return { kind: "route", route, params };
  }
  return allow.size === 0 ? { kind: "not-found" } : { kind: "method-not-allowed", allow: [...allow] };
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
