// Entry of the console bundle: styles (uPlot's and ours, bundled into one CSS file) and the app.
import { render } from "preact";
import "uplot/dist/uPlot.min.css";
import "./styles.css";
import { App } from "./app.js";

render(<App />, document.getElementById("app")!);
