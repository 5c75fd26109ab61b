import { ErrorCodes, ImagePipelineError } from "@pixport/core";

/**
 * Imports an optional package that the config asked for. A package that is missing (or cannot
 * load, e.g. a native binary for another platform) fails the composition with
 * `INVALID_CONFIGURATION` naming the setting and the package to install.
 */
export async function importOptional<T>(
  load: () => Promise<T>,
  packageName: string,
  setting: string,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw new ImagePipelineError(
      ErrorCodes.INVALID_CONFIGURATION,
      `${setting} needs the optional package ${packageName}: install it next to @pixport/container or @pixport/server (${(error as Error).message}).`,
      { cause: error },
    );
  }
}
