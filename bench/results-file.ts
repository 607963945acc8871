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
export function writeResults(file: string, report: string): void {
  const nl = report.indexOf('\n');
  const title = nl >= 0 ? report.slice(0, nl) : report;
  const body = (nl >= 0 ? report.slice(nl + 1) : '').trim();
  const block = `${BEGIN}\n${body}\n${END}`;
  mkdirSync(path.dirname(file), { recursive: true });
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
