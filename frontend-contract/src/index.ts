// The reference helpers for frontends of the highlight service.
export * from "./batch.js";
export * from "./highlights.js";
export * from "./http.js";
export * from "./reasons.js";
export * from "./stream.js";
