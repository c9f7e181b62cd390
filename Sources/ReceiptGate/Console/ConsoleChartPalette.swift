/// The colours of the console's charts: the Okabe–Ito palette, told apart by people with any
/// common colour-vision deficiency, and given by meaning where a series has one (a verification
/// that passed is green, a refusal one of a warm family), so one colour never means two things.
enum Tone: Sendable, Equatable {
    case good, calm, muted
    case warm(Int)
    case category(Int)

    static let warmColours = ["#D55E00", "#E69F00", "#993404", "#CC79A7"]
    static let categoryColours = [
        "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#B8A000",
    ]

    var className: String {
        switch self {
        case .good: "tone-good"
        case .calm: "tone-calm"
        case .muted: "tone-muted"
        case .warm(let index): "tone-warm-\(index % Self.warmColours.count)"
        case .category(let index): "tone-cat-\(index % Self.categoryColours.count)"
        }
    }

    /// A verification outcome's colour, as `/metrics` names outcomes: refusals take the warm
    /// colours in the order given.
    static func outcomes(_ names: [String]) -> [Tone] {
        var refusals = 0
        return names.map { name in
            switch name {
            case "verified": return .good
            case "duplicate": return .calm
            case "store_error": return .muted
            default:
                refusals += 1
                return .warm(refusals - 1)
            }
        }
    }

    static func categories(_ count: Int) -> [Tone] { (0..<count).map { .category($0) } }

    /// Every tone's rules for the stylesheet: a swatch's fill, a bar's fill, a line's stroke.
    static let stylesheet: String = {
        var pairs: [(String, String)] = [("tone-good", "#009E73"), ("tone-calm", "#0072B2"), ("tone-muted", "#6B6B6B")]
        pairs += warmColours.enumerated().map { ("tone-warm-\($0.offset)", $0.element) }
        pairs += categoryColours.enumerated().map { ("tone-cat-\($0.offset)", $0.element) }
        return pairs.map { name, colour in
            ".swatch.\(name) { background: \(colour); } svg rect.\(name) { fill: \(colour); } svg .series.\(name) { stroke: \(colour); }"
        }.joined(separator: "\n")
    }()
}
