public import ReceiptCore

extension AlogameGateway {
    /// No client settings of its own: clients pick its refund callbacks with `--refund-callback-format alogame`.
    public static let plugin = DialectPlugin(name: "alogame-gateway", displayName: "Alogame IAP Gateway") { _ in
        AlogameGateway()
    }
}
