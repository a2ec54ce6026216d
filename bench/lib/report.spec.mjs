import { ratioChart, replaceMarked } from './report.mjs';

const rows = [
  { date: '2026-11-21T10:50:31.650Z', series: 'SET', ratio: 0.07 },
  { date: '2026-11-21T10:50:31.650Z', series: 'GET', ratio: 0.06 },
  { date: '2026-11-22T16:39:45.855Z', series: 'SET', ratio: 0.33 },
  { date: '2026-11-23T01:39:40.253Z', series: 'SET', ratio: 0.2 },
  { date: '2026-11-23T01:39:40.253Z', series: 'GET', ratio: 1.19 },
];

describe('ratioChart', () => {
  it('draws one line per series of the latest run, over the runs that have them all, with a legend', () => {
    expect(ratioChart('KV "Redis": gateway / direct', rows, { targets: { SET: 0.4 } })).toBe(
      [
        '```mermaid',
        '---',
        'config:',
        '  themeVariables:',
        '    xyChart:',
        '      plotColorPalette: "#1f77b4, #ff7f0e"',
        '---',
        'xychart-beta',
        "  title \"KV 'Redis': gateway / direct\"",
        '  x-axis ["11-21 10:50", "11-23 01:39"]',
        '  y-axis "ratio" 0 --> 1.2',
        '  line [0.07, 0.2]',
        '  line [0.06, 1.19]',
        '```',
        '',
        '2 runs; blue: SET (target ≥ 0.4); orange: GET.',
      ].join('\n'),
    );
  });

  it('keeps the last runs only, with the y axis from 0 to at least 1', () => {
    const chart = ratioChart('t', rows.filter((r) => r.series === 'SET'), { runs: 2 });
    expect(chart).toContain('x-axis ["11-22 16:39", "11-23 01:39"]');
    expect(chart).toContain('y-axis "ratio" 0 --> 1\n  line [0.33, 0.2]');
    expect(chart.endsWith('2 runs; blue: SET.')).toBe(true);
  });

  it('draws nothing without a history', () => {
    expect(ratioChart('t', [])).toBe('');
  });
});

describe('replaceMarked', () => {
  it('replaces what stands between the markers, or answers undefined without them', () => {
    expect(replaceMarked('a\n<!-- x:start -->\nold\n<!-- x:end -->\nb', 'x', 'new')).toBe('a\n<!-- x:start -->\nnew\n<!-- x:end -->\nb');
    expect(replaceMarked('a', 'x', 'new')).toBeUndefined();
  });
});
