"""scripts/lab/barchart.py - the two-panel bar chart of a benchmark report:
1 MiB sequential write and read beside the published figures, then 4 KiB
random IOPS. Shared by scripts/lab/report.py (one bar group per lab
configuration) and scripts/initiator/report.py (one per guest run), so both
charts read the same way.

rows: (label, write, read, published write, published read, iops), each
value already formatted as the caller wants it printed, or None or "" when
not measured (gnuplot leaves a gap, not a zero bar).
Returns None, or the first lines of what gnuplot said when it failed.
"""
import os
import subprocess
import tempfile


def _v(x):
    return "?" if x is None or x == "" else str(x)


def draw(out_png, rows, title, seq_title, rand_title, xtics="noenhanced"):
    with tempfile.TemporaryDirectory(prefix="rtgt-chart.") as tmp:
        dat = os.path.join(tmp, "chart.dat")
        with open(dat, "w") as f:
            f.write("# label write read pub_write pub_read iops\n")
            for label, *vals in rows:
                f.write(f'"{label}" ' + " ".join(_v(x) for x in vals) + "\n")
        gp = f'''set terminal pngcairo size 1200,900 font "sans,10"
set output "{out_png}"
set datafile missing "?"
set multiplot layout 2,1 title "{title}"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key outside right top
set xtics {xtics}
set ylabel "MB/s"
set yrange [0:*]
set title "{seq_title}"
plot "{dat}" using 2:xtic(1) title "write" lc rgb "#1f77b4", \\
     "" using 3 title "read" lc rgb "#ff7f0e", \\
     "" using 4 title "published write" lc rgb "#aec7e8", \\
     "" using 5 title "published read" lc rgb "#ffbb78"
set ylabel "IOPS"
set title "{rand_title}"
plot "{dat}" using 6:xtic(1) title "random 70/30" lc rgb "#2ca02c"
unset multiplot
'''
        p = subprocess.run(["gnuplot"], input=gp, capture_output=True, text=True)
        if p.returncode != 0:
            return "\n".join((p.stdout + p.stderr).splitlines()[:3]) or "gnuplot failed"
    return None
