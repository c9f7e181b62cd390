import JSON
import ReceiptCore

// A transaction's offer, items and commitment written by hand on the verify answer's hot path:
// the bytes their Encodable conformances give under JSONEncoder with sorted keys
// (VerifyAnswerAgainstJSONEncoder holds the two together).

extension PurchaseOffer {
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("discount_type"); writer.string(discountType)
        writer.key("identifier"); writer.string(identifier)
        writer.key("period"); writer.string(period)
        writer.key("type"); writer.string(type)
        writer.endObject()
    }
}

extension PurchaseItem {
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("display_name"); writer.string(displayName)
        writer.key("price_milliunits"); writer.number(priceMilliunits)
        writer.key("refunds")
        writer.beginArray()
        for refund in refunds { refund.write(to: &writer) }
        writer.endArray()
        writer.key("revocation_date_ms"); writer.number(revocationDate?.epochMilliseconds)
        writer.key("sku"); writer.string(sku)
        writer.endObject()
    }
}

extension ItemRefund {
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("amount_milliunits"); writer.number(amountMilliunits)
        writer.key("date_ms"); writer.number(date?.epochMilliseconds)
        writer.key("reason"); writer.string(reason)
        writer.key("type"); writer.string(type)
        writer.endObject()
    }
}

extension BillingCommitment {
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("billing_period_number"); writer.number(billingPeriodNumber)
        writer.key("billing_plan_type"); writer.string(billingPlanType)
        writer.key("expires_date_ms"); writer.number(expiresDate?.epochMilliseconds)
        writer.key("price_milliunits"); writer.number(priceMilliunits)
        writer.key("total_billing_periods"); writer.number(totalBillingPeriods)
        writer.endObject()
    }
}
