// The parser ships no type declarations; this is the part of its output the tests and the bench
// read (counters and gauges: a value per sample).

declare module 'parse-prometheus-text-format' {
  export interface MetricFamily {
    name: string;
    help: string;
    type: string;
    metrics: Array<{ value?: string; labels?: Record<string, string> }>;
  }

  function parsePrometheusTextFormat(text: string): MetricFamily[];
  export = parsePrometheusTextFormat;
}
