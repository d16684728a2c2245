// A Prometheus counter that mirrors a running total kept elsewhere (the store's failed writes,
// the CDP proxy's connections): at each scrape it is raised by what the total grew since the last
// one, so the owner of the total keeps a plain number and needs no metrics of its own.

import { Counter, type Registry } from 'prom-client';

/** Registers counter `name`, raised at each scrape to the total `read()` returns (it never goes down). */
export function mirroredCounter(registers: Registry[], name: string, help: string, read: () => number): void {
  let last = 0;
  new Counter({
    name,
    help,
    registers,
    collect() {
      const total = read();
      if (total > last) this.inc(total - last);
      last = total;
    },
  });
}
