// xterm.js and its style sheet, in a chunk of their own that the terminal loads the
// first time a shell opens (components/terminal.ts), not with the dashboard.
import "@xterm/xterm/css/xterm.css";

export { FitAddon } from "@xterm/addon-fit";
export { Terminal } from "@xterm/xterm";
