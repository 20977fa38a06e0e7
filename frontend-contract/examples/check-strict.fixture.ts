// check-strict.mjs's own test: the lines marked "flagged" must be reported, the others not.
declare const always: { name: string; list: string[]; run(): string };
declare const maybe: { name?: string; run?: () => string } | undefined;

export const a = always.name ?? ""; // flagged
export const b = always.list?.length; // flagged
export const c = maybe!.name; // flagged
export const d = always.run?.(); // flagged
export const e = always.list?.[0]; // flagged
export const f = maybe?.name ?? "";
export const g = always.list[0] ?? "";
export const h = maybe?.run?.();
export function i<T>(value: T): T | string {
  return value ?? "";
}
export function j(value: string | null): string {
  if (value === null) return "";
  return value ?? ""; // flagged
}
export let k!: string; // flagged
export class L {
  field!: string; // flagged
  other = "";
}
