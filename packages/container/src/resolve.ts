import type { DependencyContainer } from "tsyringe";
import { instanceCachingFactory } from "tsyringe";
import type { Token } from "./tokens.js";

/** Typed `container.resolve`: `resolve(container, Tokens.Pipeline)` is an `ImagePipeline`. */
export function resolve<T>(container: DependencyContainer, token: Token<T>): T {
  return container.resolve<T>(token);
}

/**
 * Registers `make` as the singleton factory of `token` unless the container (or a parent) already
 * holds a registration for it: the way a composition root offers a default that callers may have
 * replaced already. Returns whether it registered.
 *
 * @example
 * ```ts
 * provide(scope, Tokens.Logger, () => myLogger); // kept if the caller registered a Logger
 * ```
 */
export function provide<T>(container: DependencyContainer, token: Token<T>, make: () => T): boolean {
  if (container.isRegistered(token, true)) return false;
  container.register<T>(token, { useFactory: instanceCachingFactory<T>(() => make()) });
  return true;
}

/** Whether the caller (this container or a parent) holds a registration for `token`. */
export const isProvided = (container: DependencyContainer, token: Token<unknown>) =>
  container.isRegistered(token, true);
