"""Total the garden's harvest log by crop: python3 harvest_report.py harvest.csv"""

import csv
import sys
from collections import defaultdict


def totals(path: str) -> dict[str, float]:
    by_crop: dict[str, float] = defaultdict(float)
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            by_crop[row["crop"]] += float(row["weight_kg"])
    return dict(by_crop)


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "harvest.csv"
    crops = totals(path)
    width = max(len(crop) for crop in crops)
    for crop, kg in sorted(crops.items(), key=lambda item: -item[1]):
        print(f"{crop:<{width}}  {kg:6.1f} kg")
    print(f"{'total':<{width}}  {sum(crops.values()):6.1f} kg")


if __name__ == "__main__":
    main()
