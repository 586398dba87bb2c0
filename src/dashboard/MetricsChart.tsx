import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";

export interface ChartSeries {
  readonly label: string;
  readonly color: string;
  readonly values: readonly (number | null)[];
}

interface MetricsChartProps {
  readonly title: string;
  readonly unit: string;
  /** The points' times, ms since the epoch. */
  readonly times: readonly number[];
  readonly series: readonly ChartSeries[];
  readonly testId: string;
}

const HEIGHT_PX = 160;
const HOUR_S = 3_600;

/** A uPlot line chart over the last hour, sized to its container and updated in place when the data changes. */
export function MetricsChart({ title, unit, times, series, testId }: MetricsChartProps) {
  const container = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const data = (): uPlot.AlignedData => [times.map((time) => time / 1_000), ...series.map((line) => line.values.map((value) => value ?? null))];
  // The x range is the hour up to the newest point, whatever uPlot would make of few points.
  const newestS = useRef(0);
  newestS.current = (times[times.length - 1] ?? 0) / 1_000;

  useEffect(() => {
    const element = container.current!;
    chart.current = new uPlot(
      {
        width: Math.max(200, element.clientWidth),
        height: HEIGHT_PX,
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true, auto: false, range: () => [newestS.current - HOUR_S, newestS.current] }, y: { range: (_chart, min, max) => [0, Math.max(max, min, 1) * 1.1] } },
        axes: [{}, { label: unit, size: 50 }],
        series: [{}, ...series.map((line) => ({ label: line.label, stroke: line.color, width: 1.5, spanGaps: false, points: { show: false } }))],
      },
      data(),
      element,
    );
    const resized = new ResizeObserver(() => chart.current?.setSize({ width: Math.max(200, element.clientWidth), height: HEIGHT_PX }));
    resized.observe(element);
    return () => {
      resized.disconnect();
      chart.current?.destroy();
      chart.current = null;
    };
  }, []);

  useEffect(() => chart.current?.setData(data()), [times, series]);

  return (
    <figure class="chart" data-testid={testId}>
      <figcaption>{title}</figcaption>
      <div ref={container} />
    </figure>
  );
}
