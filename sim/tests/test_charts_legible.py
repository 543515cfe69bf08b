"""Charts stay legible with many strategies (ten built in, a plugin makes eleven): no tick
label on top of another, legends beside the plotted lines, not over them. The authority
is matplotlib's own layout: the drawn extents of the texts in the rendered figure."""

from types import SimpleNamespace

import pytest

from satpage import charts

NAMES = ["proactive", "on-demand", "hot-k", "ground-store", "push-ahead",
         "container-migration", "replicate-next", "multipath", "custody", "idle-link",
         "my-own-plugin", "another-plugin"]


@pytest.fixture
def drawn(monkeypatch):
    """The figures the chart functions save, drawn (not closed)."""
    figs = []

    def keep(fig, path):
        fig.tight_layout()
        fig.canvas.draw()
        figs.append(fig)
        return path

    monkeypatch.setattr(charts, "_save", keep)
    yield figs
    for fig in figs:
        charts.plt.close(fig)


def _overlaps(boxes):
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]


def _tick_boxes(fig):
    r = fig.canvas.get_renderer()
    for ax in fig.axes:
        for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
            boxes = [t.get_window_extent(r) for t in labels if t.get_text() and t.get_visible()]
            yield ax, boxes


def _summary(i):
    return {"page_moves": 10 ** (3 + i % 5), "page_hops": 2 * 10 ** (3 + i % 6),
            "pages_lost": i, "sessions_hit": i // 2, "replication_page_hops": 10 ** (i % 7)}


def test_strategy_bars_put_no_label_on_another(drawn, tmp_path):
    res = SimpleNamespace(
        summaries=lambda: {n: _summary(i) for i, n in enumerate(NAMES)},
        scenario=SimpleNamespace(name="default", seed=1, sessions=SimpleNamespace(count=100),
                                 faults=SimpleNamespace(replicas=2)),
        world=SimpleNamespace(failures=SimpleNamespace(n_failures=5)))
    charts.cost_per_strategy(res, tmp_path / "a.png")
    charts.faults_chart(res, tmp_path / "b.png")
    for fig in drawn:
        labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
        assert all(n in labels for n in NAMES)
        for _, boxes in _tick_boxes(fig):
            assert not _overlaps(boxes)


def test_sweep_legend_sits_beside_the_lines(drawn, tmp_path):
    rows = [{"workload.zipf_s": z, "strategy": n, "page_hops": (i + 1) * z}
            for i, n in enumerate(NAMES) for z in (0.8, 1.0, 1.2)]
    charts.sweep_chart(rows, ["workload.zipf_s"], "page_hops", tmp_path / "s.png")
    (fig,) = drawn
    ax = fig.axes[0]
    r = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(r)
    assert not legend.overlaps(ax.get_window_extent(r))
    assert len(ax.get_legend().get_texts()) == len(NAMES)
    # the eleventh and twelfth strategies reuse a colour, dashed
    lines = ax.get_lines()
    styles = {(ln.get_color(), ln.get_linestyle()) for ln in lines}
    assert len(styles) == len(NAMES)
