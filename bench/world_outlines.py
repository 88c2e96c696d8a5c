r"""Makes `pipelines/publish/dashboard_assets/world_outlines.json`, the dashboard's base map, from
Natural Earth's 1:110m country outlines (public domain), at development time only.

Why a committed file: the dashboard must draw its base map with no network, so the outlines
ship inside the package; a PyPI package that carries Natural Earth's shapefile
(`geopandas<1.0`, folder `geopandas/datasets/naturalearth_lowres`) and a shapefile reader
(`pyshp`) are needed only to remake it, never at run time (docs/dashboard.md, "The base map").

    pip download --no-deps 'geopandas<1.0' pyshp -d /tmp/ne
    unzip /tmp/ne/geopandas-*.whl 'geopandas/datasets/naturalearth_lowres/*' -d /tmp/ne
    pip install pyshp
    python -m bench.world_outlines \\
        /tmp/ne/geopandas/datasets/naturalearth_lowres/naturalearth_lowres
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

OUTPUT = (
    Path(__file__).resolve().parents[1]
    / "pipelines"
    / "publish"
    / "dashboard_assets"
    / "world_outlines.json"
)
DECIMALS = 2
"""Degrees to two decimals (about 1 km): finer than the 1:110m outlines themselves."""


def outlines(shapefile_stem: str) -> dict[str, Any]:
    """Every country's rings as flat [lon, lat, lon, lat, ...] lists, rounded, repeats dropped."""
    import shapefile  # pyshp, development only

    reader = shapefile.Reader(shapefile_stem, encoding="latin-1")
    countries = []
    for record, shape in zip(reader.records(), reader.shapes(), strict=True):
        bounds = [*shape.parts, len(shape.points)]
        rings = []
        for start, end in itertools.pairwise(bounds):
            ring: list[float] = []
            for lon, lat in shape.points[start:end]:
                point = [round(lon, DECIMALS), round(lat, DECIMALS)]
                if ring[-2:] != point:
                    ring.extend(point)
            if len(ring) >= 6:
                rings.append(ring)
        countries.append({"name": record["name"], "rings": rings})
    return {
        "source": "Natural Earth 1:110m Admin 0 countries, as shipped by geopandas 0.14"
        " (naturalearth_lowres)",
        "licence": "public domain (https://www.naturalearthdata.com/about/terms-of-use/)",
        "countries": countries,
    }


if __name__ == "__main__":
    OUTPUT.write_text(json.dumps(outlines(sys.argv[1]), separators=(",", ":")) + "\n")
    print(f"{OUTPUT} ({OUTPUT.stat().st_size:,} bytes)")
