import { createRoot } from "react-dom/client";
import { App } from "./App.js";
import { readInput } from "./input.js";
import "./example.css";

const container = document.getElementById("root");
if (!container) throw new Error("index.html has no #root");
const root = createRoot(container);
readInput(window.location).then(
  (input) => root.render(<App input={input} />),
  (error: unknown) => root.render(<p className="notice notice-error">{String(error)}</p>),
);
