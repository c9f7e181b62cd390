import Crypto
import Foundation
import GooglePlay
import ReceiptGate

/// The Google Play client settings, mapped onto the generic plugin settings: the service-account
/// key sealed (never printed back), the rest plain.
extension ClientCommand {
    static let googlePlayOptions: [String: Arguments.Kind] = [
        "google-service-account-key": .single, "google-license-key": .single, "google-acknowledge": .single, "google-consume": .single,
    ]

    /// An empty value removes the setting.
    static func googlePlaySettings(from arguments: Arguments, into settings: inout ClientSettings) throws {
        typealias Setting = GooglePlayProvider.Setting
        if let path = arguments.single("google-service-account-key") {
            if path.isEmpty {
                settings.sealedSettings[Setting.serviceAccountKey] = .some(nil)
            } else {
                guard let data = FileManager.default.contents(atPath: path), data.count <= 64 * 1024 else {
                    throw UsageError("--google-service-account-key: cannot read \(path) (or it is over 64 KiB)")
                }
                do { _ = try ServiceAccountKey(json: data) } catch { throw UsageError("--google-service-account-key: \(error)") }
                settings.sealedSettings[Setting.serviceAccountKey] = String(decoding: data, as: UTF8.self)
            }
        }
        if let key = arguments.single("google-license-key") {
            if key.isEmpty {
                settings.settings[Setting.licenseKey] = .some(nil)
            } else {
                guard let der = Base64.decodeLenient(key), let parsed = try? PublicKey(subjectPublicKeyInfo: der), parsed.isRSA else {
                    throw UsageError("--google-license-key must be the base64 RSA public key from Play Console (Monetization setup)")
                }
                settings.settings[Setting.licenseKey] = [key.filter { !$0.isWhitespace }]
            }
        }
        for (option, name) in [("google-acknowledge", Setting.acknowledge), ("google-consume", Setting.consume)] {
            guard let value = arguments.single(option) else { continue }
            guard ["on", "off"].contains(value) else { throw UsageError("--\(option) must be on or off, got \"\(value)\"") }
            settings.settings[name] = [value]
        }
    }
}
