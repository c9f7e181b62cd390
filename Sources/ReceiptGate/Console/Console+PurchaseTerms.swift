import Foundation
import ReceiptCore

/// What a purchase was bought under, on its console page: the offer, the billing commitment,
/// and the items of a purchase that sold several (each with its refunds).
extension Console {
    static func offerText(_ offer: PurchaseOffer?) -> String {
        guard let offer else { return "" }
        return [
            offer.type, offer.identifier.map { "“\($0)”" }, offer.discountType, offer.period,
        ].compactMap { $0 }.joined(separator: ", ")
    }

    static func commitmentText(_ commitment: BillingCommitment?) -> String {
        guard let commitment else { return "" }
        var parts = [commitment.billingPlanType ?? "billing plan"]
        if let number = commitment.billingPeriodNumber {
            parts.append("payment \(number) of \(commitment.totalBillingPeriods.map(String.init) ?? "?")")
        }
        if let ends = commitment.expiresDate { parts.append("commitment ends \(ConsoleTime.show(ends))") }
        return parts.joined(separator: ", ")
    }

    static func itemsSection(_ record: TransactionRecord) -> HTML {
        guard !record.items.isEmpty else { return "" }
        let rows = record.items.map { item -> HTML in
            let price = item.priceMilliunits.map { "\(Double($0) / 1000) \(record.currency ?? "")" } ?? ""
            let refunds = item.refunds.map { refund in
                [
                    refund.amountMilliunits.map { "\(Double($0) / 1000)" }, refund.type, refund.reason,
                    refund.date.map { ConsoleTime.show($0) },
                ].compactMap { $0 }.joined(separator: " ")
            }.joined(separator: "; ")
            return """
                <tr><td class="sku">\(item.sku)</td><td>\(item.displayName)</td><td>\(price)</td>\
                <td class="item-revoked">\(ConsoleTime.show(item.revocationDate))</td><td class="item-refunds">\(refunds)</td></tr>
                """
        }
        return """
            <h2>Items</h2>
            \(ConsoleLayout.table(id: "items", caption: "The items this purchase sold, each refunded on its own",
                                  headings: ["SKU", "Name", "Price", "Revoked", "Refunds"], rows: rows))
            """
    }
}
