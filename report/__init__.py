"""plot.py's parts, one job each:

    records.py           the run records of a benchmark.sh output directory as one table (a Run per record)
    timing.py            the timing statistics: ratios per block with bootstrap intervals, overhead, memory
    learning.py          the learning statistics: rliable's IQM, mean and probability of improvement, time to threshold
    summary.py           the summary of one machine's runs, every statistic of the report, and summary.json from it
    markdown.py          summary.md from the summary: its sections in order, the timing ones written here
    learning_markdown.py summary.md's learning section
    tables.py            the pieces summary.md is written with: tables, numbers with intervals, figure links
    figures.py           what every figure shares (colours, log ticks, saving), and the front page's figure
    timing_figures.py    the timing figures, drawn from the summary
    learning_figures.py  the learning figures, drawn from the summary
    front.py             the front page's answer: a table and a figure over several sweeps' records (python -m report.front)

Only the figures import matplotlib: the statistics and the report import without it.
"""
