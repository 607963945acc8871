// Writes a benchmark's generated report into its results file without losing what the file holds besides it.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const BEGIN = '<!-- generated -->';
const END = '<!-- /generated -->';

/**
 * `report` is a whole generated report ("# Title", then its text). The file keeps its other sections (dated runs,
 * findings written by hand): the report's text replaces the block between the generated markers, or, in a file
 * without them (one written before the markers existed), goes in as that block right below the file's title, the
 * earlier text staying beneath it. A new file gets the report's title and the block.
 */
export function writeResults(file: string, report: string, section?: string): void {
  const nl = report.indexOf('\n');
  const title = nl >= 0 ? report.slice(0, nl) : report;
  const body = (nl >= 0 ? report.slice(nl + 1) : '').trim();
  mkdirSync(path.dirname(file), { recursive: true });
  if (section) {
    writeSection(file, title, body, section);
    return;
  }
  const block = `${BEGIN}\n${body}\n${END}`;
  if (!existsSync(file)) {
    writeFileSync(file, `${title}\n\n${block}\n`);
    return;
  }
  const current = readFileSync(file, 'utf8');
  const begin = current.indexOf(BEGIN);
  const end = current.indexOf(END, begin);
  if (begin >= 0 && end > begin) {
    writeFileSync(file, current.slice(0, begin) + block + current.slice(end + END.length));
    return;
  }
  const first = current.indexOf('\n');
  const head = first >= 0 ? current.slice(0, first) : current;
  const rest = first >= 0 ? current.slice(first + 1).trimStart() : '';
  writeFileSync(file, `${head}\n\n${block}\n${rest ? `\n${rest}` : ''}`);
}

/**
 * A named generated section (`<!-- generated:NAME -->`): a run of some rows only, beside the file's main generated
 * block. The report's title becomes the section's "## " heading; the block replaces an earlier one of that name or,
 * new, goes at the end of the file (a new file gets the report's title first).
 */
function writeSection(file: string, title: string, body: string, section: string): void {
  const begin = `<!-- generated:${section} -->`;
  const end = `<!-- /generated:${section} -->`;
  const block = `${begin}\n${title.replace(/^#+ /, '## ')}\n\n${body}\n${end}`;
  const current = existsSync(file) ? readFileSync(file, 'utf8') : `${title}\n`;
  const b = current.indexOf(begin);
  const e = current.indexOf(end, b);
  if (b >= 0 && e > b) {
    writeFileSync(file, current.slice(0, b) + block + current.slice(e + end.length));
    return;
  }
  writeFileSync(file, `${current.trimEnd()}\n\n${block}\n`);
}
