/**
 * The house rules that the type checker, the formatter and the layer check (dependency
 * cruiser) do not hold, checked by `npm run lint`:
 * - no source file over MAX_FILE_LINES lines: a file that grows past it is two things;
 * - no line over MAX_LINE_LENGTH characters (the formatter's width) in src, test and
 *   bench, but for a line that a string, a template or a regular expression runs
 *   through, which the formatter cannot break;
 * - the address family of text is told in src/wire/ only (addressFamily, textFamily),
 *   never by looking for a colon elsewhere.
 * Prints each breach as FILE:LINE: what, and exits 1 when there is one.
 */
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import ts from 'typescript';

const MAX_FILE_LINES = 400;
const MAX_LINE_LENGTH = 120;
const FAMILY_BY_COLON = /\.includes\(['"]:['"]\)/;

const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'src', 'test', 'bench'], { encoding: 'utf8' })
  .split('\n')
  .filter((file) => file.endsWith('.ts'));

/** The lines (0-based) that a string, template or regular expression literal of `text` runs through. */
function literalLines(file: string, text: string): Set<number> {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lines = new Set<number>();
  const literal = new Set([
    ts.SyntaxKind.StringLiteral,
    ts.SyntaxKind.NoSubstitutionTemplateLiteral,
    ts.SyntaxKind.TemplateHead,
    ts.SyntaxKind.TemplateMiddle,
    ts.SyntaxKind.TemplateTail,
    ts.SyntaxKind.RegularExpressionLiteral,
  ]);
  const visit = (node: ts.Node): void => {
    if (literal.has(node.kind)) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      for (let line = first; line <= last; line++) lines.add(line);
    }
    node.forEachChild(visit);
  };
  visit(source);
  return lines;
}

const breaches: string[] = [];
for (const file of files) {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    continue; // listed by git, deleted in the work tree
  }
  const lines = text.split('\n');
  const inSrc = file.startsWith('src/');
  if (inSrc && lines.length - 1 > MAX_FILE_LINES) breaches.push(`${file}: ${lines.length - 1} lines, more than ${MAX_FILE_LINES}`);
  const literals = lines.some((line) => line.length > MAX_LINE_LENGTH) ? literalLines(file, text) : new Set<number>();
  lines.forEach((line, index) => {
    if (line.length > MAX_LINE_LENGTH && !literals.has(index)) {
      breaches.push(`${file}:${index + 1}: ${line.length} characters, more than ${MAX_LINE_LENGTH}`);
    }
    if (inSrc && !file.startsWith('src/wire/') && FAMILY_BY_COLON.test(line)) {
      breaches.push(`${file}:${index + 1}: the family told by a colon; use addressFamily or textFamily (src/wire/ip-address.ts)`);
    }
  });
}
for (const breach of breaches) console.error(breach);
if (breaches.length > 0) {
  console.error(`house rules: ${breaches.length} breach${breaches.length === 1 ? '' : 'es'}`);
  process.exit(1);
}
