/** `cairn/react`: React bindings over `cairn/client` (React is a peer dependency). */
export * from "../react/index.js";
