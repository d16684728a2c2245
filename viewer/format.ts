// How the viewer writes times, sizes and durations.

/** Wall-clock time of a unix-µs timestamp: `14:03:07.123`. */
export function clock(tsMicros: number): string {
  const date = new Date(tsMicros / 1000);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

/** A duration in ms: `840 ms`, `1.24 s`, `2 min 5 s`. */
export function duration(ms: number): string {
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** A byte count: `512 B`, `1.5 KiB`, `3.2 MiB`. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** A URL without its origin when that leaves something (`/api/x?y`), else as given. */
export function shortUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.protocol === 'data:') return `${url.slice(0, 40)}…`;
    const rest = `${parsed.pathname}${parsed.search}`;
    return rest === '/' ? parsed.host : `${parsed.host}${rest}`;
  } catch {
    return url;
  }
}

/** The first characters of a CDP id, enough to tell targets apart. */
export function shortId(id: string): string {
  return id.length > 8 ? id.slice(0, 8) : id;
}
