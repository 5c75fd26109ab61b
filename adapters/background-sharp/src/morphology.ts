/** Erosion with a 4-connected cross: a subject pixel stays only when its 4 neighbours are subject (edges count as subject). */
export function erode(mask: Uint8Array, width: number, height: number): Uint8Array {
  const out = new Uint8Array(mask.length);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const index = y * width + x;
      out[index] =
        mask[index] === 1 &&
        (x === 0 || mask[index - 1] === 1) &&
        (x === width - 1 || mask[index + 1] === 1) &&
        (y === 0 || mask[index - width] === 1) &&
        (y === height - 1 || mask[index + width] === 1)
          ? 1
          : 0;
    }
  }
  return out;
}

/** Dilation with a 4-connected cross: a pixel is subject when it or one of its 4 neighbours is. */
export function dilate(mask: Uint8Array, width: number, height: number): Uint8Array {
  const out = new Uint8Array(mask.length);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const index = y * width + x;
      out[index] =
        mask[index] === 1 ||
        (x > 0 && mask[index - 1] === 1) ||
        (x < width - 1 && mask[index + 1] === 1) ||
        (y > 0 && mask[index - width] === 1) ||
        (y < height - 1 && mask[index + width] === 1)
          ? 1
          : 0;
    }
  }
  return out;
}

/** Removes 4-connected subject components smaller than `minArea` pixels. */
export function dropSmallComponents(mask: Uint8Array, width: number, minArea: number): Uint8Array {
  const pixels = mask.length;
  const label = new Int32Array(pixels).fill(-1);
  const stack = new Int32Array(pixels);
  const out = new Uint8Array(mask);
  const members: number[] = [];
  for (let start = 0; start < pixels; start += 1) {
    if (mask[start] !== 1 || label[start] !== -1) continue;
    members.length = 0;
    let top = 0;
    stack[top++] = start;
    label[start] = start;
    while (top > 0) {
      const index = stack[--top]!;
      members.push(index);
      const x = index % width;
      const neighbours = [
        x > 0 ? index - 1 : -1,
        x < width - 1 ? index + 1 : -1,
        index >= width ? index - width : -1,
        index < pixels - width ? index + width : -1,
      ];
      for (const next of neighbours) {
        if (next >= 0 && mask[next] === 1 && label[next] === -1) {
          label[next] = start;
          stack[top++] = next;
        }
      }
    }
    if (members.length < minArea) for (const index of members) out[index] = 0;
  }
  return out;
}
