"""Warm-ups the zygote runs once, after preloading and before forking any job.

A library's first use costs far more than its import: lazily imported submodules (pandas
loads its matplotlib plotting backend on the first ``.plot()``), caches (matplotlib's font
lookups, text layout), dispatch tables. Paid once here, every forked job inherits them; paid in
each job, they were most of a pandas + matplotlib test's run time.

Only our own code runs here, and it leaves nothing a job could observe: every figure is closed,
no option is changed, and the global random states of ``random`` and numpy are restored.
"""

import io
import random
import sys
import time


def _numpy():
    import numpy as np

    a = np.arange(12, dtype=float).reshape(3, 4)
    np.linalg.pinv(a @ a.T + np.eye(3))
    np.percentile(a, [25, 75])
    np.unique(a.astype(int), return_counts=True)
    np.random.default_rng(0).normal(size=4)


def _pandas():
    import pandas as pd

    df = pd.DataFrame({"k": ["a", "b", "a"], "v": [1.0, 2.0, 3.0],
                       "d": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03"])})
    df.groupby("k")["v"].agg(["sum", "mean", "count"])
    df.describe(include="all")
    df.pivot_table(index="k", values="v", aggfunc="sum")
    df.merge(df, on="k", suffixes=("", "_right")).sort_values("v").reset_index(drop=True)
    df["v"].value_counts()
    df.set_index("d").resample("D").sum(numeric_only=True)
    df.to_csv(io.StringIO(), index=False)
    pd.read_csv(io.StringIO("a,b\n1,x\n2,y\n"))
    df.to_json()
    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        df.groupby("k")["v"].sum().plot(kind="bar", title="warm-up")
        df.plot(x="d", y="v")
        df["v"].plot(kind="hist")
        plt.close("all")


def _matplotlib():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2)
    axes[0][0].plot([0, 1], [1, 0], label="line")
    axes[0][0].legend()
    axes[0][0].set_title("title")
    axes[0][0].set_xlabel("x")
    axes[0][0].set_ylabel("y")
    axes[0][1].bar(["a", "b"], [1, 2])
    axes[1][0].hist([1, 2, 2, 3], bins=3)
    image = axes[1][1].imshow([[0, 1], [1, 0]])
    fig.colorbar(image, ax=axes[1][1])
    fig.tight_layout()
    fig.savefig(io.BytesIO(), format="png")
    plt.close("all")


def _seaborn():
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    df = pd.DataFrame({"k": ["a", "b", "a", "b"], "v": [1.0, 2.0, 3.0, 4.0]})
    sns.histplot(df["v"])
    sns.barplot(data=df, x="k", y="v", errorbar=None)
    sns.heatmap(df.pivot_table(index="k", values="v"))
    plt.close("all")


def _scipy_stats():
    from scipy import stats

    stats.norm.cdf(0.5)
    stats.ttest_ind([1, 2, 3], [2, 3, 4])
    stats.pearsonr([1, 2, 3], [2, 4, 7])


def _sklearn():
    import numpy as np
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    x = np.arange(20, dtype=float).reshape(10, 2)
    y = x.sum(axis=1)
    train_x, _, train_y, _ = train_test_split(x, y, test_size=0.2, random_state=0)
    LinearRegression().fit(StandardScaler().fit_transform(train_x), train_y)


WARMERS = (
    ("numpy", _numpy),
    ("pandas", _pandas),
    ("matplotlib.pyplot", _matplotlib),
    ("seaborn", _seaborn),
    ("scipy.stats", _scipy_stats),
    ("sklearn", _sklearn),
)


def run():
    """Warms every preloaded library it knows; returns {module: seconds or error}."""
    report = {}
    saved_random = random.getstate()
    numpy = sys.modules.get("numpy")
    saved_numpy = numpy.random.get_state() if numpy else None
    for module, warm in WARMERS:
        if module not in sys.modules:
            continue
        started = time.perf_counter()
        try:
            warm()
            report[module] = round(time.perf_counter() - started, 4)
        except Exception as e:  # noqa: BLE001 - a failed warm-up only costs speed
            report[module] = f"{type(e).__name__}: {e}"
    random.setstate(saved_random)
    if numpy:
        numpy.random.set_state(saved_numpy)
    return report
