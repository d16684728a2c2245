// The gateway's ledger of redeemed viewer tickets (docs/viewer.md "Through the gateway"): a
// ticket's id is inserted once, in the shared database, so a viewer link opens one viewer whichever
// instance it reaches. Rows are kept until the ticket expires (60 s), then removed on the way.

import type { TicketLedger } from 'browser-telemetry-agent/http-kit';
import type { Database } from './database.ts';

export class DatabaseTicketLedger implements TicketLedger {
  constructor(
    private readonly db: Database,
    private readonly now: () => number = Date.now,
  ) {}

  async claim(id: string, expiresAt: number): Promise<boolean> {
    // Expired ids can no longer be presented (the ticket's own expiry refuses them first).
    await this.db.run('DELETE FROM viewer_tickets WHERE expires_at <= ?', [this.now()]);
    // Both backends: the insert of an id already there changes no row (and takes no lock that a
    // failed statement would leave a PostgreSQL transaction unusable with).
    const inserted = await this.db.run('INSERT INTO viewer_tickets (jti, expires_at) VALUES (?, ?) ON CONFLICT (jti) DO NOTHING', [id, expiresAt]);
    return inserted === 1;
  }
}
