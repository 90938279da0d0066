// The topic's backlog and throughput over the last minutes: samples the page polled, kept in
// memory (the gateway keeps no history), drawn with uPlot. The figure's caption says the same
// in words for screen readers; the canvas itself is hidden from them.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { formatCount, formatRate } from "../format.js";

export interface Sample {
  /** Unix time, seconds. */
  readonly t: number;
  readonly backlog: number;
  readonly inFlight: number;
  /** Deliveries per second since the previous sample (null for the first). */
  readonly deliveriesPerSecond: number | null;
  /** Messages added per second since the previous sample, when the count grew. */
  readonly publishedPerSecond: number | null;
}

const HEIGHT = 180;

export function ActivityChart({
  samples,
  minutes,
}: {
  readonly samples: readonly Sample[];
  readonly minutes: number;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  useEffect(() => {
    const el = box.current!;
    const styles = getComputedStyle(document.documentElement);
    const color = (name: string, fallback: string) =>
      styles.getPropertyValue(name).trim() || fallback;
    const axisStroke = color("--muted", "#555");
    const grid = { stroke: color("--grid", "#e5e7eb"), width: 1 };
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: HEIGHT,
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      scales: {
        // Always the whole window, filling from the right as samples come in.
        x: { time: true, range: (_u, _min, max) => [max - minutes * 60, max] },
        n: { range: (_u, _min, max) => [0, Math.max(4, max)] },
        r: { range: (_u, _min, max) => [0, Math.max(1, max)] },
      },
      axes: [
        { stroke: axisStroke, grid, ticks: grid, values: "{HH}:{mm}:{ss}" },
        {
          scale: "n",
          stroke: axisStroke,
          grid,
          ticks: grid,
          label: "messages",
          labelSize: 18,
          size: 50,
        },
        {
          scale: "r",
          side: 1,
          stroke: axisStroke,
          grid: { show: false },
          ticks: grid,
          label: "per second",
          labelSize: 18,
          size: 50,
        },
      ],
      series: [
        {},
        {
          label: "Backlog",
          scale: "n",
          stroke: color("--chart-1", "#2563eb"),
          width: 2,
          fill: color("--chart-1-fill", "rgba(37,99,235,0.08)"),
        },
        { label: "In flight", scale: "n", stroke: color("--chart-2", "#d97706"), width: 2 },
        {
          label: "Deliveries/s",
          scale: "r",
          stroke: color("--chart-3", "#059669"),
          width: 2,
          dash: [4, 3],
        },
        {
          label: "Published/s",
          scale: "r",
          stroke: color("--chart-4", "#7c3aed"),
          width: 2,
          dash: [1, 3],
        },
      ],
    };
    const p = new uPlot(opts, toData(samples), el);
    plot.current = p;
    const resize = new ResizeObserver(() =>
      p.setSize({ width: Math.max(200, el.clientWidth), height: HEIGHT }),
    );
    resize.observe(el);
    return () => {
      resize.disconnect();
      p.destroy();
      plot.current = null;
    };
  }, []);

  useEffect(() => {
    plot.current?.setData(toData(samples));
  }, [samples]);

  const last = samples[samples.length - 1];
  return (
    <figure class="chart">
      <div ref={box} aria-hidden="true" />
      <figcaption>
        {last
          ? `Last ${minutes} minutes, sampled every few seconds while this page is open. Now: backlog ${formatCount(last.backlog)}, in flight ${formatCount(last.inFlight)}, ${formatRate(last.deliveriesPerSecond ?? 0)} deliveries/s, ${formatRate(last.publishedPerSecond ?? 0)} published/s.`
          : "Collecting samples…"}
      </figcaption>
    </figure>
  );
}

function toData(samples: readonly Sample[]): uPlot.AlignedData {
  return [
    samples.map((s) => s.t),
    samples.map((s) => s.backlog),
    samples.map((s) => s.inFlight),
    samples.map((s) => s.deliveriesPerSecond),
    samples.map((s) => s.publishedPerSecond),
  ];
}
