import Foundation
import OpenSSLCrypto
import Synchronization

/// Proven certificate chains, keyed by a digest of their x5c certificates, each with the window
/// in which the chain is valid; and, for the fast path, the exact header bytes of tokens whose
/// signature verified with that chain. A hit costs one hash of the header and leaves one ECDSA
/// verification per token. Entries are added only after a signature verified. Bounded: the oldest
/// entry leaves first, in both maps.
final class VerifiedChainCache: Sendable {
    /// A chain ready to be cached; `window` nil means it is cached already (only the header is new).
    struct Proven {
        let chain: Data
        let key: PublicKey
        let window: CertificateChainVerifier.ValidityWindow?
    }

    private struct Entry {
        let key: PublicKey
        let window: CertificateChainVerifier.ValidityWindow
    }

    private struct State {
        var chains: [Data: Entry] = [:]
        var chainOrder: [Data] = []
        var headers: [Data: Data] = [:]  // header bytes → chain digest
        var headerOrder: [Data] = []
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) { self.capacity = max(1, capacity) }

    func lookup(header: Data, at date: Date) -> PublicKey? {
        state.withLock { state in
            guard let chain = state.headers[header], let entry = state.chains[chain], entry.window.contains(date) else {
                return nil
            }
            return entry.key
        }
    }

    func lookup(chain: Data, at date: Date) -> PublicKey? {
        state.withLock { state in
            guard let entry = state.chains[chain], entry.window.contains(date) else { return nil }
            return entry.key
        }
    }

    func store(_ proven: Proven, header: Data) {
        state.withLock { state in
            if let window = proven.window {
                if state.chains[proven.chain] == nil {
                    state.chainOrder.append(proven.chain)
                    if state.chainOrder.count > capacity { state.chains[state.chainOrder.removeFirst()] = nil }
                }
                state.chains[proven.chain] = Entry(key: proven.key, window: window)
            }
            if state.headers[header] == nil {
                state.headerOrder.append(header)
                if state.headerOrder.count > capacity * 4 { state.headers[state.headerOrder.removeFirst()] = nil }
            }
            state.headers[header] = proven.chain
        }
    }

    var count: Int { state.withLock { $0.chains.count } }
    var headerCount: Int { state.withLock { $0.headers.count } }
}
