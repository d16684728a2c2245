// Markdown tables for the generated docs (scripts/docs/*.ts).

/** A cell's text with the characters that would end or break a table cell escaped. */
export function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ].join('\n');
}

/** The first line of a generated document: where it comes from and how to regenerate it. */
export function generatedNotice(source: string): string {
  return `<!-- Generated from ${source} by \`node scripts/generate-docs.mjs\`; do not edit by hand. -->`;
}
