import Foundation

/// Charts as inline SVG, drawn on the server: lines over equally spaced points, or stacked bars
/// (`ConsoleChart+Bars.swift`). Colours come from the stylesheet (`Tone`), so the page needs no
/// script and no style attribute.
enum ConsoleChart {
    static let width = 720, height = 260
    static let left = 44, right = 12, top = 12, bottom = 28

    /// `series`: name and one value per point, all the same length; `tones` one per series
    /// (categories in order when nil).
    static func lines(
        id: String, title: String, series: [(name: String, values: [Int])],
        xLabels: (first: String, middle: String, last: String), tones: [Tone]? = nil
    ) -> HTML {
        let tones = tones ?? Tone.categories(series.count)
        let points = series.first?.values.count ?? 0
        let peak = max(1, series.flatMap(\.values).max() ?? 0)
        let plotWidth = Double(width - left - right), plotHeight = Double(height - top - bottom)
        func x(_ index: Int) -> Double {
            Double(left) + (points > 1 ? plotWidth * Double(index) / Double(points - 1) : 0)
        }
        func y(_ value: Int) -> Double { Double(top) + plotHeight * (1 - Double(value) / Double(peak)) }
        var svg = frame(id: id, title: title, peak: peak, xLabels: xLabels)
        for (index, line) in series.enumerated() {
            let path = line.values.enumerated().map { "\(format(x($0.offset))),\(format(y($0.element)))" }.joined(
                separator: " ")
            svg +=
                "<polyline class=\"series \(tones[index].className)\" points=\"\(path)\"><title>\(line.name)</title></polyline>"
        }
        svg += "</svg>"
        return svg + legend(zip(series, tones).map { Series(name: $0.0.name, values: $0.0.values, tone: $0.1) })
    }

    /// The opened `<svg>` with its title, the grid at 0, half and the peak, the axis and the x labels.
    static func frame(
        id: String, title: String, peak: Int, xLabels: (first: String, middle: String, last: String)
    )
        -> HTML
    {
        let plotWidth = Double(width - left - right), plotHeight = Double(height - top - bottom)
        func y(_ value: Int) -> Double { Double(top) + plotHeight * (1 - Double(value) / Double(peak)) }
        var svg: HTML =
            "<svg viewBox=\"0 0 \(width) \(height)\" role=\"img\" aria-labelledby=\"\(id)-title\" xmlns=\"http://www.w3.org/2000/svg\"><title id=\"\(id)-title\">\(title)</title>"
        for value in Set([0, peak / 2, peak]).sorted() {
            let level = format(y(value))
            svg += "<line class=\"grid\" x1=\"\(left)\" x2=\"\(width - right)\" y1=\"\(level)\" y2=\"\(level)\"/>"
            svg += "<text x=\"\(left - 6)\" y=\"\(format(y(value) + 4))\" text-anchor=\"end\">\(value)</text>"
        }
        svg += "<line class=\"axis\" x1=\"\(left)\" x2=\"\(left)\" y1=\"\(top)\" y2=\"\(height - bottom)\"/>"
        let baseline = height - bottom + 18
        svg += "<text x=\"\(left)\" y=\"\(baseline)\">\(xLabels.first)</text>"
        svg +=
            "<text x=\"\(format(Double(left) + plotWidth / 2))\" y=\"\(baseline)\" text-anchor=\"middle\">\(xLabels.middle)</text>"
        svg += "<text x=\"\(width - right)\" y=\"\(baseline)\" text-anchor=\"end\">\(xLabels.last)</text>"
        return svg
    }

    static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}
