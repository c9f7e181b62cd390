import Foundation

extension ConsoleChart {
    /// A series of a chart: its name, one value per point, and its colour (`Tone`).
    struct Series: Sendable {
        let name: String
        let values: [Int]
        let tone: Tone
    }

    /// Stacked bars, one per point, each series a segment in the order given (the first at the
    /// bottom); each segment's title says its point, series and value.
    static func bars(
        id: String, title: String, points: [String], series: [Series],
        xLabels: (first: String, middle: String, last: String)
    ) -> HTML {
        let totals = points.indices.map { index in series.reduce(0) { $0 + ($1.values[safe: index] ?? 0) } }
        let peak = max(1, totals.max() ?? 0)
        let plotWidth = Double(width - left - right), plotHeight = Double(height - top - bottom)
        let slot = plotWidth / Double(max(1, points.count)), barWidth = max(1, slot * 0.8)
        var svg = frame(id: id, title: title, peak: peak, xLabels: xLabels)
        for (index, point) in points.enumerated() {
            var base = 0
            let x = Double(left) + slot * Double(index) + (slot - barWidth) / 2
            for line in series {
                let value = line.values[safe: index] ?? 0
                guard value > 0 else { continue }
                let y = Double(top) + plotHeight * (1 - Double(base + value) / Double(peak))
                let height = plotHeight * Double(value) / Double(peak)
                svg +=
                    "<rect class=\"bar \(line.tone.className)\" x=\"\(format(x))\" y=\"\(format(y))\" width=\"\(format(barWidth))\" height=\"\(format(height))\"><title>\(point) · \(line.name): \(value)</title></rect>"
                base += value
            }
        }
        return svg + "</svg>" + legend(series)
    }

    /// Lines, one per series, over equally spaced points.
    static func lines(
        id: String, title: String, series: [Series], xLabels: (first: String, middle: String, last: String)
    ) -> HTML {
        lines(
            id: id, title: title, series: series.map { ($0.name, $0.values) }, xLabels: xLabels,
            tones: series.map(\.tone))
    }

    /// The numbers a chart draws, as a table: one row per point, one column per series, and a total.
    static func table(id: String, caption: String, pointHeading: String, points: [String], series: [Series]) -> HTML {
        let rows = points.enumerated().map { index, point -> HTML in
            let cells = series.map { HTML("<td class=\"count\">\($0.values[safe: index] ?? 0)</td>") }
            let total = series.reduce(0) { $0 + ($1.values[safe: index] ?? 0) }
            return "<tr><th scope=\"row\">\(point)</th>\(cells)<td class=\"count total\">\(total)</td></tr>"
        }
        return ConsoleLayout.table(
            id: id, caption: caption, headings: [pointHeading] + series.map(\.name) + ["Total"], rows: rows)
    }

    /// A chart and its numbers side by side (stacked on a narrow screen).
    static func withTable(_ chart: HTML, figureID: String, caption: String, table: HTML) -> HTML {
        "<div class=\"chart-pair\"><figure id=\"\(figureID)\">\(chart)<figcaption>\(caption)</figcaption></figure><div class=\"chart-table\">\(table)</div></div>"
    }

    static func legend(_ series: [Series]) -> HTML {
        let items = series.map { HTML("<li><span class=\"swatch \($0.tone.className)\"></span>\($0.name)</li>") }
        return "<ul class=\"legend\">\(items)</ul>"
    }

    /// Keeps the `kept - 1` largest series and adds the rest up as one named `other`, so that no
    /// two series of a chart share a colour.
    static func largest(
        _ series: [(name: String, values: [Int])], kept: Int, other: String
    ) -> [(
        name: String, values: [Int]
    )] {
        guard series.count > kept else { return series }
        let ranked = series.sorted { ($0.values.reduce(0, +), $1.name) > ($1.values.reduce(0, +), $0.name) }
        let rest = ranked.dropFirst(kept - 1)
        let summed = (rest.first?.values.indices ?? 0..<0).map { index in rest.reduce(0) { $0 + $1.values[index] } }
        return Array(ranked.prefix(kept - 1)) + [(other, summed)]
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
