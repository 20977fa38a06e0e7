// The example's strictness beyond `tsc --strict`, with the TypeScript compiler API:
//   - no non-null assertion (`x!`): it hides a missing value instead of handling it;
//   - no `??`, `??=` or `?.` whose left side's type cannot be null or undefined: a default for
//     a field the service always sends says the types are wrong (issue 32), or the code is.
// First it checks itself on check-strict.fixture.ts, whose lines marked `// flagged` must be
// exactly the ones reported, so a check that has stopped finding anything fails too.
//   node examples/check-strict.mjs
import { readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const here = dirname(fileURLToPath(import.meta.url));
const example = join(here, "react-pdf-highlighter");
const fixture = join(here, "check-strict.fixture.ts");

function compilerOptions() {
  const path = join(example, "tsconfig.json");
  const config = ts.readConfigFile(path, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, example);
  return parsed;
}

const NULLISH =
  ts.TypeFlags.Any |
  ts.TypeFlags.Unknown |
  ts.TypeFlags.Null |
  ts.TypeFlags.Undefined |
  ts.TypeFlags.Void;

function canBeNullish(type) {
  if (type.flags & NULLISH) return true;
  if (type.isUnion()) return type.types.some(canBeNullish);
  if (type.flags & ts.TypeFlags.TypeParameter) {
    const constraint = type.getConstraint();
    return constraint === undefined || canBeNullish(constraint);
  }
  return false;
}

/** Every offending node of the files, as "path:line: what". */
function findings(program, files) {
  const checker = program.getTypeChecker();
  const found = [];
  const report = (node, what) => {
    const file = node.getSourceFile();
    const { line } = file.getLineAndCharacterOfPosition(node.getStart());
    found.push({ file: file.fileName, line: line + 1, what });
  };
  const alwaysThere = (expression) => !canBeNullish(checker.getTypeAtLocation(expression));
  const visit = (node) => {
    if (ts.isNonNullExpression(node)) {
      report(node, `non-null assertion: ${node.getText()}`);
    } else if (
      (ts.isVariableDeclaration(node) || ts.isPropertyDeclaration(node)) &&
      node.exclamationToken
    ) {
      // `let x!: T` and `field!: T` hide a missing value as `x!` does.
      report(node, `definite assignment assertion: ${node.name.getText()}`);
    } else if (
      ts.isBinaryExpression(node) &&
      (node.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken ||
        node.operatorToken.kind === ts.SyntaxKind.QuestionQuestionEqualsToken) &&
      alwaysThere(node.left)
    ) {
      report(node, `"${node.operatorToken.getText()}" on a value that is never null: ${node.left.getText()}`);
    } else if (
      (ts.isPropertyAccessExpression(node) ||
        ts.isElementAccessExpression(node) ||
        ts.isCallExpression(node)) &&
      node.questionDotToken &&
      alwaysThere(node.expression)
    ) {
      report(node, `"?." on a value that is never null: ${node.expression.getText()}`);
    }
    ts.forEachChild(node, visit);
  };
  for (const name of files) {
    const source = program.getSourceFile(name);
    if (!source) throw new Error(`not in the program: ${name}`);
    visit(source);
  }
  return found;
}

const parsed = compilerOptions();

// 1. The check on its fixture: exactly the lines marked "// flagged".
const fixtureProgram = ts.createProgram([fixture], parsed.options);
const marked = readFileSync(fixture, "utf8")
  .split("\n")
  .flatMap((text, i) => (text.includes("// flagged") ? [i + 1] : []));
const got = findings(fixtureProgram, [fixture]).map((f) => f.line);
if (marked.length === 0 || JSON.stringify(got) !== JSON.stringify(marked)) {
  console.error(`check-strict is broken: on its fixture it reported lines ${got}, not ${marked}`);
  process.exit(1);
}

// 2. The example's own files.
const files = parsed.fileNames.filter((name) => !name.endsWith(".d.ts"));
const program = ts.createProgram(files, parsed.options);
const errors = findings(program, files);
for (const f of errors) console.error(`${relative(process.cwd(), f.file)}:${f.line}: ${f.what}`);
if (errors.length > 0) process.exit(1);
console.log(`check-strict: ${files.length} files of the example, no non-null assertion, no needless ?? or ?.`);
