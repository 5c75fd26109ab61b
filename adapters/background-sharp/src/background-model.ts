/** Adds to `expected` the bilinearly interpolated mean residual of the background per grid cell. */
export function refineModel(
  rgb: Uint8Array,
  expected: Float32Array,
  background: Uint8Array,
  width: number,
  height: number,
): void {
  const grid = 8;
  const cellsX = Math.min(grid, width);
  const cellsY = Math.min(grid, height);
  const sums = new Float64Array(cellsX * cellsY * 3);
  const counts = new Float64Array(cellsX * cellsY);
  for (let y = 0; y < height; y += 1) {
    const cy = Math.min(cellsY - 1, Math.floor((y * cellsY) / height));
    for (let x = 0; x < width; x += 1) {
      const index = y * width + x;
      if (background[index] !== 1) continue;
      const cell = cy * cellsX + Math.min(cellsX - 1, Math.floor((x * cellsX) / width));
      counts[cell]! += 1;
      for (let channel = 0; channel < 3; channel += 1) {
        sums[cell * 3 + channel]! += rgb[index * 3 + channel]! - expected[index * 3 + channel]!;
      }
    }
  }
  const cellArea = (width / cellsX) * (height / cellsY);
  const mean = (cx: number, cy: number, channel: number) => {
    const cell = cy * cellsX + cx;
    // Cells mostly covered by the subject keep the surface (no correction).
    return counts[cell]! >= 0.1 * cellArea ? sums[cell * 3 + channel]! / counts[cell]! : 0;
  };
  for (let y = 0; y < height; y += 1) {
    const gy = Math.max(0, Math.min(cellsY - 1, ((y + 0.5) * cellsY) / height - 0.5));
    const y0 = Math.floor(gy);
    const y1 = Math.min(cellsY - 1, y0 + 1);
    const fy = gy - y0;
    for (let x = 0; x < width; x += 1) {
      const gx = Math.max(0, Math.min(cellsX - 1, ((x + 0.5) * cellsX) / width - 0.5));
      const x0 = Math.floor(gx);
      const x1 = Math.min(cellsX - 1, x0 + 1);
      const fx = gx - x0;
      const index = y * width + x;
      for (let channel = 0; channel < 3; channel += 1) {
        const correction =
          (1 - fy) * ((1 - fx) * mean(x0, y0, channel) + fx * mean(x1, y0, channel)) +
          fy * ((1 - fx) * mean(x0, y1, channel) + fx * mean(x1, y1, channel));
        expected[index * 3 + channel]! += correction;
      }
    }
  }
}

/** Robust quadratic colour surface over the border band: coefficients per channel and noise. */
export function fitBorderModel(rgb: Uint8Array, width: number, height: number) {
  const depth = Math.max(1, Math.min(3, Math.floor(Math.min(width, height) / 16)));
  const samples: number[] = [];
  const step = Math.max(1, Math.floor((2 * (width + height) * depth) / 6000));
  let counter = 0;
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const onBorder = x < depth || y < depth || x >= width - depth || y >= height - depth;
      if (!onBorder) {
        if (x === depth && y >= depth && y < height - depth) x = width - depth - 1;
        continue;
      }
      counter += 1;
      if (counter % step === 0) samples.push(y * width + x);
    }
  }
  const nx = (x: number) => (width === 1 ? 0 : (2 * x) / (width - 1) - 1);
  const ny = (y: number) => (height === 1 ? 0 : (2 * y) / (height - 1) - 1);
  const features = samples.map((index) => {
    const u = nx(index % width);
    const v = ny(Math.floor(index / width));
    return [1, u, v, u * u, u * v, v * v];
  });
  let weights = samples.map(() => 1);
  let coefficients = [0, 1, 2].map(() => [0, 0, 0, 0, 0, 0]);
  let sigma = 0;
  for (let iteration = 0; iteration < 5; iteration += 1) {
    coefficients = [0, 1, 2].map((channel) =>
      solveLeastSquares(
        features,
        samples.map((index) => rgb[index * 3 + channel]!),
        weights,
      ),
    );
    const residuals = samples.map((index, sample) => {
      const f = features[sample]!;
      let squared = 0;
      for (let channel = 0; channel < 3; channel += 1) {
        const c = coefficients[channel]!;
        let expected = 0;
        for (let term = 0; term < 6; term += 1) expected += c[term]! * f[term]!;
        const delta = rgb[index * 3 + channel]! - expected;
        squared += delta * delta;
      }
      return Math.sqrt(squared);
    });
    const sorted = [...residuals].sort((a, b) => a - b);
    // Half the border may be subject: the median residual describes the background's noise.
    sigma = 1.4826 * (sorted[Math.floor(sorted.length / 2)] ?? 0);
    const cutoff = Math.max(12, 3 * sigma);
    weights = residuals.map((residual) => (residual <= cutoff ? 1 : 0));
  }
  return { coefficients, sigma };
}

/** Weighted least squares for 6 terms (normal equations, Gaussian elimination with pivoting). */
function solveLeastSquares(features: number[][], values: number[], weights: number[]): number[] {
  const n = 6;
  const a = Array.from({ length: n }, () => new Array<number>(n + 1).fill(0));
  let total = 0;
  for (let sample = 0; sample < features.length; sample += 1) {
    const w = weights[sample]!;
    if (w === 0) continue;
    total += w;
    const f = features[sample]!;
    for (let row = 0; row < n; row += 1) {
      for (let column = 0; column < n; column += 1) a[row]![column]! += w * f[row]! * f[column]!;
      a[row]![n]! += w * f[row]! * values[sample]!;
    }
  }
  if (total === 0) return [0, 0, 0, 0, 0, 0];
  // A little ridge keeps degenerate borders (1-px images, constant rows) solvable.
  for (let row = 0; row < n; row += 1) a[row]![row]! += 1e-6 * total;
  for (let column = 0; column < n; column += 1) {
    let pivot = column;
    for (let row = column + 1; row < n; row += 1) {
      if (Math.abs(a[row]![column]!) > Math.abs(a[pivot]![column]!)) pivot = row;
    }
    [a[column], a[pivot]] = [a[pivot]!, a[column]!];
    const divisor = a[column]![column]!;
    if (Math.abs(divisor) < 1e-12) continue;
    for (let row = 0; row < n; row += 1) {
      if (row === column) continue;
      const factor = a[row]![column]! / divisor;
      for (let k = column; k <= n; k += 1) a[row]![k]! -= factor * a[column]![k]!;
    }
  }
  return a.map((row, index) => (Math.abs(row[index]!) < 1e-12 ? 0 : row[n]! / row[index]!));
}
