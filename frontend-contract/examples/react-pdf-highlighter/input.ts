/**
 * What a chat frontend has once an answer has finished streaming: the service's base URL, the
 * question, the answer with its citation markers ("[1]") and, per marker, the chunk the
 * retrieval step cited. Here they come from a JSON file named in the page's query
 * (`?input=answer.json`, default `input.json`), so the same build can show any answer.
 */
import type { components } from "../../highlight-api.js";

export type CitationIn = components["schemas"]["CitationIn"];

export interface ExampleInput {
  /** The highlight service, e.g. "http://127.0.0.1:8000" (another origin: see README, CORS). */
  baseUrl: string;
  question: string;
  answer: string;
  citations: { chunk_id: string; citation_id: string }[];
}

function text(value: unknown, name: string): string {
  if (typeof value !== "string") throw new TypeError(`input: "${name}" must be a string`);
  return value;
}

/** Checks the JSON instead of casting it: a typo in the file is a message, not a blank page. */
export function parseInput(value: unknown): ExampleInput {
  if (typeof value !== "object" || value === null) throw new TypeError("input: not an object");
  const record: Record<string, unknown> = { ...value };
  const citations = record["citations"];
  if (!Array.isArray(citations)) throw new TypeError('input: "citations" must be a list');
  return {
    baseUrl: text(record["baseUrl"], "baseUrl").replace(/\/+$/, ""),
    question: text(record["question"], "question"),
    answer: text(record["answer"], "answer"),
    citations: citations.map((item: unknown, i) => {
      if (typeof item !== "object" || item === null) throw new TypeError(`citation ${i}`);
      const fields: Record<string, unknown> = { ...item };
      return {
        chunk_id: text(fields["chunk_id"], `citations[${i}].chunk_id`),
        citation_id: text(fields["citation_id"], `citations[${i}].citation_id`),
      };
    }),
  };
}

export async function readInput(location: Location): Promise<ExampleInput> {
  const name = new URLSearchParams(location.search).get("input") || "input.json";
  const response = await fetch(new URL(name, location.href));
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  return parseInput(await response.json());
}
