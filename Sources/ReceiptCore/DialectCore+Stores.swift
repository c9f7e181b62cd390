public import Foundation

/// How a dialect finds the store its wire format means, from the stores' declared facts only: a
/// store added later is reached through every dialect without the dialect changing. The service
/// core and the test fakes use these same rules, and a dialect's part of the OpenAPI document
/// lists the stores it reaches by them (`StoreDeclaration.dialectCandidates`).
extension DialectCore {
    /// The served store with this vendor code (case-insensitive), or nil.
    public func store(forVendorCode code: String) -> StoreDeclaration? {
        StoreDeclaration.store(forVendorCode: code, among: stores)
    }

    /// The served stores whose apps run on `system`, by store id.
    public func stores(runningOn system: OperatingSystem) -> [StoreDeclaration] {
        stores.filter { $0.operatingSystems.contains(system) }
    }

    /// The store a dialect that names only a device's operating system means, narrowed in turn
    /// while more than one is left: to the stores the client registered apps with, then to those
    /// accepting the evidence's form (`EvidenceShape.forms(of:)`), then to the one that recognizes
    /// it as its own. A store needing evidence fields the dialect cannot carry is never a
    /// candidate; when the client has apps in none, the first by store id answers for all. Throws
    /// `StoreChoiceRefused` naming the stores when none, or still several, are left.
    public func store(
        runningOn system: OperatingSystem, client: ClientInfo, evidence: String,
        carriesEvidenceFields: Bool = false
    ) throws(StoreChoiceRefused) -> StoreDeclaration {
        var candidates = StoreDeclaration.dialectCandidates(
            runningOn: system, among: stores, carriesEvidenceFields: carriesEvidenceFields)
        guard !candidates.isEmpty else {
            throw StoreChoiceRefused(system: system, candidates: [], reason: "no store for \(system) apps is served")
        }
        // Apps in none of them: any would refuse alike (the client registered no app there), so
        // one answers, as the only store of the system would.
        if candidates.count > 1, !candidates.contains(where: { !client.appIdentifiers($0.identifiers).isEmpty }) {
            return candidates.min { $0.store.rawValue < $1.store.rawValue } ?? candidates[0]
        }
        let forms = EvidenceShape.forms(of: evidence)
        // A narrowing that would leave none is skipped: the store asked then says what is wrong.
        // The receipt's form comes after the apps, then what only one store's SDK makes.
        let narrowings: [(StoreDeclaration) -> Bool] = [
            { !client.appIdentifiers($0.identifiers).isEmpty },
            { !$0.evidenceShapes.isDisjoint(with: forms) },
            { $0.recognizesEvidence(evidence) },
        ]
        for keeps in narrowings where candidates.count > 1 {
            let kept = candidates.filter(keeps)
            if !kept.isEmpty { candidates = kept }
        }
        guard candidates.count == 1, let chosen = candidates.first else {
            throw StoreChoiceRefused(
                system: system, candidates: candidates.map(\.displayName),
                reason: "the client's apps and the receipt do not tell them apart")
        }
        return chosen
    }
}

extension StoreDeclaration {
    /// The store among `stores` with this vendor code (case-insensitive), or nil.
    public static func store(forVendorCode code: String, among stores: [StoreDeclaration]) -> StoreDeclaration? {
        let wanted = code.uppercased()
        return stores.first { $0.vendorCode == wanted }
    }

    /// The stores a dialect that names only a device's operating system can reach: those whose
    /// apps run on `system`, less those needing evidence fields the dialect cannot carry.
    public static func dialectCandidates(
        runningOn system: OperatingSystem, among stores: [StoreDeclaration],
        carriesEvidenceFields: Bool = false
    ) -> [StoreDeclaration] {
        stores.filter {
            $0.operatingSystems.contains(system)
                && (carriesEvidenceFields || !$0.evidenceFields.contains(where: \.required))
        }
    }
}

/// No single store could be chosen for a device's operating system.
public struct StoreChoiceRefused: Error, Sendable, CustomStringConvertible {
    public let system: OperatingSystem
    /// The stores still in question (display names); empty when none is served.
    public let candidates: [String]
    public let reason: String

    public var description: String {
        candidates.isEmpty ? reason : "\(system) is served by \(candidates.joined(separator: " and ")): \(reason)"
    }
}
