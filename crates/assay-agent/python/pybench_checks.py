"""PyBench's file checks, run inside the sandbox over one task's output files.

Each check is a dict from assay's check table (``data/pybench-checks.json``): ``kind`` plus its
fields; paths are relative to the job's working directory (``output/...`` the episode's
files, ``data/...`` its inputs). ``check(spec)`` returns when the check holds and raises
``AssertionError`` saying why when it does not; any other exception fails it too, as it fails
upstream's test. The computations are upstream's (data/unit_test/tests.py, commit fa90fae),
restated: the same library calls on the same files give the same verdicts. ``exact_diff`` marks
the corrected image comparison (no uint8 wrap-around, grayscale images compared per pixel).
"""

import os
import pickle


def check(spec):
    KINDS[spec["kind"]](spec)


def _exists(path):
    assert os.path.exists(path), f"{path} does not exist"


def exists(spec):
    _exists(spec["path"])


def exist_all(spec):
    for path in spec["paths"]:
        _exists(path)


def exist_any(spec):
    assert any(os.path.exists(p) for p in spec["paths"]), \
        f"none of {', '.join(spec['paths'])} exists"


def always_fail(spec):
    raise AssertionError(spec["why"])


def always_pass(spec):
    pass


def pickle_loads(spec):
    path = spec["path"]
    _exists(path)
    try:
        with open(path, "rb") as f:
            data = pickle.load(f)
        if spec.get("print"):
            print(data)  # upstream's test 40 prints it: a repr that raises fails it
        loaded = True
    except Exception:  # noqa: BLE001 - upstream counts any failure as not loadable
        loaded = False
    assert loaded, f"{path} does not unpickle"


def _csv(path):
    import pandas as pd
    return pd.read_csv(path)


def csv_no_duplicates(spec):
    duplicates = _csv(spec["path"]).duplicated().sum()
    assert duplicates == 0, f"{spec['path']} has {duplicates} duplicated rows"


def csv_no_nulls(spec):
    nulls = _csv(spec["path"]).isnull().sum().sum()
    assert nulls == 0, f"{spec['path']} has {nulls} empty cells"


def csv_no_nulls_no_duplicates(spec):
    csv_no_nulls(spec)
    csv_no_duplicates(spec)


def csv_no_iqr_outliers(spec):
    df = _csv(spec["path"])
    for column in df.select_dtypes(include=["float64", "int"]).columns:
        q1, q3 = df[column].quantile(0.25), df[column].quantile(0.75)
        low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
        outliers = ((df[column] < low) | (df[column] > high)).sum()
        assert outliers == 0, f"column {column!r} has {outliers} values beyond 1.5 IQR"


def _numeric_looking_columns(df):
    import pandas as pd
    found = []
    for column in df.columns:
        if df[column].dtype == "object":
            try:
                pd.to_numeric(df[column].str.replace(",", "").replace("$", ""), errors="raise")
                found.append(column)
            except ValueError:
                pass
    return found


def tables_no_numeric_strings(spec):
    import pandas as pd
    excel = pd.read_excel(spec["excel"])
    csv = _csv(spec["csv"])
    for path, df in ((spec["excel"], excel), (spec["csv"], csv)):
        columns = _numeric_looking_columns(df)
        assert not columns, f"{path}: text columns that hold numbers: {columns}"


def csv_dates_parse(spec):
    import pandas as pd
    dates = pd.to_datetime(_csv(spec["path"])[spec["column"]], errors="coerce")
    assert all(dates.notnull()), f"{spec['path']}: some {spec['column']!r} are not dates"


def csv_rows(spec):
    rows = _csv(spec["path"]).shape[0]
    assert rows == spec["rows"], f"{spec['path']} has {rows} rows, not {spec['rows']}"


def csv_sorted(spec):
    df = _csv(spec["path"])
    ordered = df.sort_values(by=spec["by"], ascending=spec["ascending"])
    assert df.equals(ordered), f"{spec['path']} is not sorted by {spec['by']}"


def excel_not_empty(spec):
    import pandas as pd
    first, second = spec["paths"]
    try:
        df = pd.read_excel(first)
    except Exception:  # noqa: BLE001 - as upstream: the other name then
        df = pd.read_excel(second)
    assert not df.empty, f"{second} has no rows"


def _image(path):
    from PIL import Image
    return Image.open(path)


def image_size(spec):
    _exists(spec["path"])
    with _image(spec["path"]) as img:
        size = img.size
    assert size == (spec["width"], spec["height"]), \
        f"{spec['path']} is {size[0]}x{size[1]}, not {spec['width']}x{spec['height']}"


def image_square(spec):
    _exists(spec["path"])
    with _image(spec["path"]) as img:
        width, height = img.size
    assert width == height, f"{spec['path']} is {width}x{height}, not square"


def image_mode(spec):
    mode = _image(spec["path"]).mode
    assert mode == spec["mode"], f"{spec['path']} has mode {mode}, not {spec['mode']}"


def _similar(img1, img2, exact, threshold=0.4, tolerance=0.5):
    """The share of pixels of ``img2`` (resized and converted to ``img1``'s size and mode)
    within half the range of ``img1``'s, at least ``threshold``. Upstream subtracts in uint8
    (wrapping around) and, for 2-D images, counts whole rows; ``exact`` does neither."""
    import numpy as np
    if img1.size != img2.size:
        img2 = img2.resize(img1.size)
    if img1.mode != img2.mode:
        img2 = img2.convert(img1.mode)
    a, b = np.array(img1), np.array(img2)
    if exact:
        diff = np.abs(a.astype(np.int32) - b.astype(np.int32))
        within = diff <= 255 * tolerance if diff.ndim == 2 else np.all(
            diff <= 255 * tolerance, axis=-1)
    else:
        within = np.all(np.abs(a - b) <= 255 * tolerance, axis=-1)
    similarity = np.count_nonzero(within) / (a.shape[0] * a.shape[1])
    return similarity >= threshold, similarity


def image_undoes(spec):
    from PIL import Image
    _exists(spec["path"])
    out, reference = _image(spec["path"]), _image(spec["reference"])
    transform = spec["transform"]
    if transform == "rotate270":
        undone = out.rotate(270, expand=True)
    elif transform == "rotate180":
        undone = out.rotate(180, expand=True)
    elif transform == "flip_left_right":
        undone = out.transpose(Image.FLIP_LEFT_RIGHT)
    elif transform == "flip_top_bottom":
        undone = out.transpose(Image.FLIP_TOP_BOTTOM)
    else:
        raise ValueError(f"unknown transform {transform!r}")
    same, similarity = _similar(undone, reference, spec.get("exact_diff", False))
    assert same, f"{spec['path']} undone ({transform}) matches {spec['reference']} on " \
                 f"{similarity:.0%} of pixels, under 40%"


def image_tiles_ratio(spec):
    from PIL import Image
    reference = _image(spec["reference"])
    tiles = [_image(p) for p in spec["tiles"]]
    widths, heights = zip(*(t.size for t in tiles))
    joined = Image.new("RGB", (sum(widths), max(heights)))
    x = 0
    for tile in tiles:
        joined.paste(tile, (x, 0))
        x += tile.width
    ratio = joined.size[0] / joined.size[1]
    expected = reference.size[0] / reference.size[1]
    assert abs(ratio - expected) <= spec["tolerance"], \
        f"the tiles side by side have aspect ratio {ratio:.3f}, the input {expected:.3f}"


def image_dark_ratio(spec):
    import numpy as np
    gray = np.array(_image(spec["path"]).convert("L"))
    ratio = np.sum(gray <= 50) / gray.size
    assert ratio > spec["above"], \
        f"{ratio:.0%} of {spec['path']} is dark (gray <= 50), not over {spec['above']:.0%}"


def _stat(path, stat):
    import numpy as np
    img = _image(path)
    if stat == "mean_l":
        return np.mean(np.array(img.convert("L")))
    if stat == "std_l":
        return np.std(np.array(img.convert("L")))
    if stat == "mean_s":
        return np.mean(np.array(img.convert("HSV"))[:, :, 1])
    if stat == "sharpness":
        import cv2
        return cv2.Laplacian(np.array(img.convert("L")), cv2.CV_64F).var()
    raise ValueError(f"unknown statistic {stat!r}")


def _compare(name, out, reference, op):
    holds = out < reference if op == "lt" else out > reference
    word = "lower" if op == "lt" else "higher"
    assert holds, f"{name} {out:.4g} is not {word} than the input's {reference:.4g}"


def image_stat(spec):
    out = _stat(spec["path"], spec["stat"])
    reference = _stat(spec["reference"], spec["stat"])
    _compare(spec["stat"], out, reference, spec["op"])


def dir_has_suffix(spec):
    found = any(f.endswith(spec["suffix"]) for f in os.listdir(spec["dir"]))
    assert found, f"{spec['dir']} has no {spec['suffix']} file"


def _replaygain(path):
    from mutagen.mp3 import MP3
    tag = MP3(path).tags.get("TXXX:replaygain_track_gain")
    return float(tag.text[0].split()[0]) if tag else 0


def mp3_replaygain(spec):
    out = _replaygain(spec["path"])
    reference = _replaygain(spec["reference"])
    assert reference > out, f"ReplayGain {out} is not below the input's {reference}"


def mp3_shorter(spec):
    from mutagen.mp3 import MP3
    out = MP3(spec["path"]).info.length * 1000
    reference = MP3(spec["reference"]).info.length * 1000
    assert out < reference, f"{spec['path']} lasts {out:.0f} ms, the input {reference:.0f} ms"


def audio_dbfs(spec):
    from pydub import AudioSegment
    _exists(spec["path"])
    out = AudioSegment.from_file(spec["path"]).dBFS
    reference = AudioSegment.from_file(spec["reference"]).dBFS
    _compare("loudness (dBFS)", out, reference, spec["op"])


KINDS = {fn.__name__: fn for fn in (
    exists, exist_all, exist_any, always_fail, always_pass, pickle_loads, csv_no_duplicates,
    csv_no_nulls, csv_no_nulls_no_duplicates, csv_no_iqr_outliers, tables_no_numeric_strings,
    csv_dates_parse, csv_rows, csv_sorted, excel_not_empty, image_size, image_square, image_mode,
    image_undoes, image_tiles_ratio, image_dark_ratio, image_stat, dir_has_suffix,
    mp3_replaygain, mp3_shorter, audio_dbfs)}
