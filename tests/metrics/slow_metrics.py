"""Slow, obviously-correct reference implementations (plain Python loops over samples and bins) for the metric tests.

They restate the definitions independently of adacal's vectorised code: bin i is (lower_i, upper_i], the first bin
also takes everything at or below its upper edge, the last everything above its lower edge.
"""

from __future__ import annotations

import math


def rows(probs):
    return [[float(v) for v in row] for row in probs]


def top_label(probs, labels):
    """(confidences, correct) with the first maximal class as the prediction."""
    confidences, correct = [], []
    for row, label in zip(rows(probs), labels):
        best = 0
        for k in range(1, len(row)):
            if row[k] > row[best]:
                best = k
        confidences.append(row[best])
        correct.append(1.0 if best == int(label) else 0.0)
    return confidences, correct


def width_edges(n_bins):
    return [i / n_bins for i in range(n_bins + 1)]


def mass_edges(values, n_bins):
    ordered = sorted(values)
    n = len(ordered)
    sizes = [n // n_bins + (1 if i < n % n_bins else 0) for i in range(n_bins)]
    edges = [0.0]
    position = 0
    for size in sizes[:-1]:
        position += size
        if position >= n:
            edges.append(1.0)
        else:
            edges.append((ordered[position - 1] + ordered[position]) / 2.0)
    edges.append(1.0)
    return edges


def bin_of(value, edges):
    n_bins = len(edges) - 1
    for i in range(n_bins):
        if value <= edges[i + 1]:
            return i
    return n_bins - 1


def binned(values, targets, edges):
    """Per bin: (count, mean value, mean target); empty bins are (0, 0, 0)."""
    n_bins = len(edges) - 1
    members = [[] for _ in range(n_bins)]
    for value, target in zip(values, targets):
        members[bin_of(value, edges)].append((value, target))
    out = []
    for group in members:
        if group:
            out.append((len(group), sum(v for v, _ in group) / len(group), sum(t for _, t in group) / len(group)))
        else:
            out.append((0, 0.0, 0.0))
    return out


def l1(values, targets, edges):
    n = len(values)
    return sum(count / n * abs(conf - acc) for count, conf, acc in binned(values, targets, edges))


def ece_ew(probs, labels, n_bins=15):
    conf, correct = top_label(probs, labels)
    return l1(conf, correct, width_edges(n_bins))


def ece_em(probs, labels, n_bins=15):
    conf, correct = top_label(probs, labels)
    return l1(conf, correct, mass_edges(conf, n_bins))


def debiased_square(values, targets, edges):
    n = len(values)
    total = 0.0
    for count, conf, acc in binned(values, targets, edges):
        if count >= 2:
            total += count / n * ((conf - acc) ** 2 - acc * (1 - acc) / (count - 1))
    return total


def ece_debias(probs, labels, n_bins=15, mode="top-label"):
    if mode == "top-label":
        conf, correct = top_label(probs, labels)
        return math.sqrt(max(debiased_square(conf, correct, mass_edges(conf, n_bins)), 0.0))
    table = rows(probs)
    squares = []
    for k in range(len(table[0])):
        column = [row[k] for row in table]
        target = [1.0 if int(label) == k else 0.0 for label in labels]
        squares.append(max(debiased_square(column, target, mass_edges(column, n_bins)), 0.0))
    return math.sqrt(sum(squares) / len(squares))


def mce(probs, labels, n_bins=15):
    conf, correct = top_label(probs, labels)
    return max(abs(c - a) for count, c, a in binned(conf, correct, width_edges(n_bins)) if count)


def classwise_ece(probs, labels, n_bins=15):
    table = rows(probs)
    total = 0.0
    for k in range(len(table[0])):
        column = [row[k] for row in table]
        target = [1.0 if int(label) == k else 0.0 for label in labels]
        total += l1(column, target, width_edges(n_bins))
    return total / len(table[0])


def nll(logits, labels):
    total = 0.0
    for row, label in zip(rows(logits), labels):
        top = max(row)
        log_norm = top + math.log(math.fsum(math.exp(v - top) for v in row))
        total += log_norm - row[int(label)]
    return total / len(labels)


def brier(probs, labels):
    table = rows(probs)
    total = 0.0
    for row, label in zip(table, labels):
        total += sum((p - (1.0 if k == int(label) else 0.0)) ** 2 for k, p in enumerate(row))
    return total / len(table)


def error(probs, labels):
    _, correct = top_label(probs, labels)
    return 1.0 - sum(correct) / len(correct)


def sweep_bins(conf, correct, binning="equal-mass"):
    """Try b = 2, 3, ...; stop at the first b whose non-empty bin accuracies decrease somewhere; return b − 1."""
    n = len(conf)
    for b in range(2, n + 1):
        edges = mass_edges(conf, b) if binning == "equal-mass" else width_edges(b)
        accuracies = [acc for count, _, acc in binned(conf, correct, edges) if count]
        if any(later < earlier for earlier, later in zip(accuracies, accuracies[1:])):
            return b - 1
    return n


def ece_sweep(probs, labels, binning="equal-mass"):
    conf, correct = top_label(probs, labels)
    b = sweep_bins(conf, correct, binning)
    edges = mass_edges(conf, b) if binning == "equal-mass" else width_edges(b)
    return l1(conf, correct, edges)


# ------------------------------------------------------------------ OOD detection (OOD positive, higher = more OOD)


def auroc(in_scores, out_scores):
    """P(OOD score > in-distribution score) + ½ P(equal), over every pair."""
    total = 0.0
    for o in out_scores:
        for i in in_scores:
            total += 1.0 if o > i else 0.5 if o == i else 0.0
    return total / (len(in_scores) * len(out_scores))


def average_precision(positives, negatives):
    """Σ over distinct thresholds t (descending, flagging score >= t) of (recall gained) × precision at t."""
    total, recall_before = 0.0, 0.0
    for t in sorted(set(positives) | set(negatives), reverse=True):
        tp = sum(s >= t for s in positives)
        fp = sum(s >= t for s in negatives)
        recall = tp / len(positives)
        if tp:
            total += (recall - recall_before) * tp / (tp + fp)
        recall_before = recall
    return total


def fpr_at_95(in_scores, out_scores):
    """Highest threshold t flagging (score >= t) at least 95% of OOD samples; the fraction of in-dist flagged."""
    for t in sorted(set(in_scores) | set(out_scores), reverse=True):
        if sum(s >= t for s in out_scores) >= 0.95 * len(out_scores):
            return sum(s >= t for s in in_scores) / len(in_scores)
    raise AssertionError


def fpr_at_95_closest(in_scores, out_scores, level=0.95):
    """The selection rule of Hendrycks et al.'s code, restated as a scan over distinct thresholds (descending): the
    point whose TPR is closest to the level, the last (lowest threshold) of equally close ones."""
    points = []
    for t in sorted(set(in_scores) | set(out_scores), reverse=True):
        tp = sum(s >= t for s in out_scores)
        points.append((tp / len(out_scores), sum(s >= t for s in in_scores) / len(in_scores)))
        if tp == len(out_scores):
            break
    best = min(abs(r - level) for r, _ in points)
    return [f for r, f in points if abs(r - level) == best][-1]
