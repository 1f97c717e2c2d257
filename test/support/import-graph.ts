/**
 * The import graph of a source tree, read with the TypeScript compiler's parser: every
 * `import` and `export ... from`, `import type` included, every `import('...')` type and every
 * dynamic `import()`. Used by `structure.test.ts` (SPEC 12: no import cycle, the core's imports).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** One import of a file: a module of the tree (its path relative to the root) or a package. */
export interface Import {
  /** The imported file relative to the root (`core/lane.ts`), or the package's specifier (`node:fs`, `tinypool`). */
  readonly target: string;
  /** Whether it names a package rather than a file of the tree. */
  readonly external: boolean;
  /** Whether it brings types only (`import type`, `export type`, an `import('...')` type): gone from the emitted JavaScript. */
  readonly typeOnly: boolean;
}

/** Every `.ts` file under `dir` (declaration files aside). */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...sourceFiles(full));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** Whether an import or export declaration brings types only: on the whole, or in every one of its names. */
function declarationIsTypeOnly(node: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(node)) {
    if (node.isTypeOnly) return true;
    const clause = node.exportClause;
    return clause !== undefined && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((element) => element.isTypeOnly);
  }
  const clause = node.importClause;
  if (clause === undefined) return false; // `import './x.js'`: for its effects
  if (clause.isTypeOnly) return true;
  if (clause.name !== undefined) return false;
  const bindings = clause.namedBindings;
  return (
    bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((element) => element.isTypeOnly)
  );
}

/** The imports of one file of the tree rooted at `root`. */
export function importsOf(root: string, file: string): Import[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: { spec: string; typeOnly: boolean }[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push({ spec: node.moduleSpecifier.text, typeOnly: declarationIsTypeOnly(node) });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ spec: node.argument.literal.text, typeOnly: true });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      // A computed specifier (a constant, `as string`) is a package the tree loads lazily on purpose: named by its text.
      const spec = argument === undefined ? '' : ts.isStringLiteral(argument) ? argument.text : argument.getText(source);
      found.push({ spec, typeOnly: false });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.map(({ spec, typeOnly }) => {
    if (!spec.startsWith('.')) return { target: spec, external: true, typeOnly };
    const resolved = path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'));
    return { target: path.relative(root, resolved).split(path.sep).join('/'), external: false, typeOnly };
  });
}

/** The import graph of the tree under `root`: each file (relative to `root`, `/`-separated) and its imports. */
export function importGraph(root: string): Map<string, Import[]> {
  const graph = new Map<string, Import[]>();
  for (const file of sourceFiles(root).sort()) {
    graph.set(path.relative(root, file).split(path.sep).join('/'), importsOf(root, file));
  }
  return graph;
}

/**
 * The import cycles of `graph`: its strongly connected components (Tarjan) of more than one file,
 * and any file that imports itself, each sorted, type-only imports counted like the others.
 */
export function cycles(graph: Map<string, Import[]>): string[][] {
  let next = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const lowOf = (file: string): number => low.get(file) ?? Number.POSITIVE_INFINITY;
  const strong = (file: string): void => {
    indexOf.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const { target, external } of graph.get(file) ?? []) {
      if (external || !graph.has(target)) continue;
      if (!indexOf.has(target)) {
        strong(target);
        low.set(file, Math.min(lowOf(file), lowOf(target)));
      } else if (onStack.has(target)) low.set(file, Math.min(lowOf(file), indexOf.get(target) ?? Number.POSITIVE_INFINITY));
    }
    if (low.get(file) !== indexOf.get(file)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    const selfImport = (graph.get(file) ?? []).some((edge) => !edge.external && edge.target === file);
    if (component.length > 1 || selfImport) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!indexOf.has(file)) strong(file);
  return found;
}

/** The edges of `graph` that stay inside `component`, as `from -> to` lines: what a cycle's message shows. */
export function edgesWithin(graph: Map<string, Import[]>, component: readonly string[]): string[] {
  const members = new Set(component);
  const edges: string[] = [];
  for (const from of component) {
    for (const { target, external, typeOnly } of graph.get(from) ?? []) {
      if (!external && members.has(target)) edges.push(`${from} -> ${target}${typeOnly ? ' (type)' : ''}`);
    }
  }
  return edges;
}
