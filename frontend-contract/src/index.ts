// The reference helpers for frontends of the highlight service.
export * from "./highlights.js";
export * from "./stream.js";
