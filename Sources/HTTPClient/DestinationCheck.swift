import CCurl
import CShims
import Foundation

/// Which resolved addresses a request may connect to. For the policies that check, the host is
/// resolved before the transfer is queued, every address is checked, and the connection is pinned
/// to the checked ones (`CURLOPT_RESOLVE`), so a second DNS answer cannot swap in another (DNS
/// rebinding).
package enum DestinationPolicy: Sendable, Hashable {
    /// Whatever libcurl resolves the host to (the default; configured upstreams such as Apple and Google).
    case any
    /// Resolved here and pinned, every address allowed: game servers' URLs where the operator
    /// allows private destinations take the path `publicOnly` takes, only without its refusals.
    case anyAddressPinned
    /// Only public unicast addresses: no loopback, private, link-local (cloud metadata),
    /// carrier-grade NAT, multicast or unspecified ones (game servers' own URLs).
    case publicOnly

    /// Whether the transfer connects only where this module checked.
    var checksHere: Bool { self != .any }
}

enum Destination {
    /// Whether `pin` asks DNS (a checked policy, a name rather than an address literal): then it
    /// blocks, and runs where blocking is allowed.
    static func resolvesHost(url: String, policy: DestinationPolicy) -> Bool {
        guard policy.checksHere, let host = URLComponents(string: url)?.host, !host.isEmpty else { return false }
        let bareHost = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return !PublicAddress.isLiteral(bareHost)
    }

    /// The `CURLOPT_RESOLVE` entry (`host:port:address,…`) that pins a checked name to its checked
    /// addresses, nil when there is nothing to pin, or a refusal.
    ///
    /// A host that is an address literal is checked as it is and gets no entry: libcurl connects
    /// to a literal without resolving it, and it cannot read `[v6]:port:…` as an entry (the URL
    /// gives IPv6 literals in brackets; the check and getaddrinfo take them without).
    static func pin(url: String, policy: DestinationPolicy) throws -> String? {
        guard policy.checksHere else { return nil }
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
            throw HTTPClientError(.invalidURL, "cannot read the host of \(url)")
        }
        let bareHost = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let publicOnly = policy == .publicOnly
        let isAllowed = { (address: String) -> Bool in !publicOnly || PublicAddress.isPublic(address) }
        if PublicAddress.isLiteral(bareHost) {
            guard isAllowed(bareHost) else {
                throw HTTPClientError(.destinationRefused, "the address \(bareHost) is not public")
            }
            return nil
        }
        let port = components.port ?? (components.scheme?.lowercased() == "https" ? 443 : 80)
        let addresses = try resolve(bareHost)
        guard addresses.contains(where: isAllowed) else {
            throw HTTPClientError(
                .destinationRefused,
                "\(bareHost) resolves only to addresses that are not public (\(addresses.prefix(3).joined(separator: ", ")))"
            )
        }
        guard addresses.allSatisfy(isAllowed) else {
            throw HTTPClientError(.destinationRefused, "\(bareHost) resolves to a non-public address among its answers")
        }
        // libcurl takes IPv6 addresses of an entry in brackets, and tries them in the order given.
        // It cannot read one with a zone (`fe80::1%eth0`); such link-local answers pass only when
        // every address may, and are then left for libcurl to find.
        let pinnable = addresses.filter { !$0.contains("%") }
        guard !pinnable.isEmpty else { return nil }
        return "\(bareHost):\(port):" + pinnable.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
    }

    /// getaddrinfo, on the calling thread (one of the client's resolvers).
    static func resolve(_ host: String) throws -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &result)
        guard status == 0, let first = result else {
            throw HTTPClientError(.connectFailed, "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if let address = entry.pointee.ai_addr,
                getnameinfo(address, entry.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST)
                    == 0
            {
                let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !addresses.contains(text) { addresses.append(text) }
            }
            cursor = entry.pointee.ai_next
        }
        return addresses
    }
}

/// Public unicast or not, for IPv4 and IPv6 literals. An IPv6 address that carries an IPv4 one
/// for translation (IPv4-mapped, SIIT's IPv4-translated, the NAT64 well-known prefix) is judged
/// as that IPv4 address: it reaches what the IPv4 address reaches.
package enum PublicAddress {
    package static func isPublic(_ address: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return isPublicIPv4(UInt32(bigEndian: v4.s_addr)) }
        guard let bytes = ipv6Bytes(address) else { return false }
        if let embedded = translatedIPv4(bytes) { return isPublicIPv4(embedded) }
        if bytes.allSatisfy({ $0 == 0 }) { return false }  // ::
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return false }  // ::1
        if bytes[0] & 0xfe == 0xfc { return false }  // fc00::/7 unique local
        if bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80 { return false }  // fe80::/10 link-local
        if bytes[0] == 0xff { return false }  // multicast
        if bytes[0..<12].allSatisfy({ $0 == 0 }) { return false }  // IPv4-compatible (deprecated)
        // documentation
        if bytes[0] == 0x20 && bytes[1] == 0x01 && bytes[2] == 0x0d && bytes[3] == 0xb8 { return false }
        // the rest of 64:ff9b::/32 (local-use NAT64 64:ff9b:1::/48)
        if bytes[0] == 0x00 && bytes[1] == 0x64 && bytes[2] == 0xff && bytes[3] == 0x9b { return false }
        if bytes[0] == 0x20 && bytes[1] == 0x02 { return false }  // 6to4 2002::/16 (wraps IPv4)
        // Teredo 2001::/32
        if bytes[0] == 0x20 && bytes[1] == 0x01 && bytes[2] == 0x00 && bytes[3] == 0x00 { return false }
        if bytes[0] == 0xfe && bytes[1] & 0xc0 == 0xc0 { return false }  // fec0::/10 site-local
        return true
    }

    /// True for an IPv4 or IPv6 address (an IPv6 one with or without a `%zone`), false for a name.
    package static func isLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || ipv6Bytes(host) != nil
    }

    private static func ipv6Bytes(_ address: String) -> [UInt8]? {
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address.split(separator: "%").first.map(String.init) ?? address, &v6) == 1 else {
            return nil
        }
        return withUnsafeBytes(of: v6) { Array($0) }
    }

    /// The IPv4 address in its last four bytes when the IPv6 address is one that carries it:
    /// `::ffff:0:0/96` (IPv4-mapped), `::ffff:0:0:0/96` (IPv4-translated), `64:ff9b::/96` (NAT64).
    private static func translatedIPv4(_ bytes: [UInt8]) -> UInt32? {
        let prefix = Array(bytes[0..<12])
        let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
        let translated: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0]
        let nat64: [UInt8] = [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]
        guard prefix == mapped || prefix == translated || prefix == nat64 else { return nil }
        return UInt32(bytes[12]) << 24 | UInt32(bytes[13]) << 16 | UInt32(bytes[14]) << 8 | UInt32(bytes[15])
    }

    static func isPublicIPv4(_ value: UInt32) -> Bool {
        func within(_ network: UInt32, _ bits: UInt32) -> Bool { value >> (32 - bits) == network >> (32 - bits) }
        let blocked: [(UInt32, UInt32)] = [
            (0x0000_0000, 8),  // 0.0.0.0/8 "this network"
            (0x0A00_0000, 8),  // 10/8
            (0x6440_0000, 10),  // 100.64/10 carrier-grade NAT
            (0x7F00_0000, 8),  // 127/8 loopback
            (0xA9FE_0000, 16),  // 169.254/16 link-local, cloud metadata
            (0xAC10_0000, 12),  // 172.16/12
            (0xC000_0000, 24),  // 192.0.0/24 protocol assignments
            (0xC000_0200, 24),  // 192.0.2/24 documentation
            (0xC0A8_0000, 16),  // 192.168/16
            (0xC058_6300, 24),  // 192.88.99/24 6to4 relay anycast
            (0xC612_0000, 15),  // 198.18/15 benchmarking
            (0xC633_6400, 24),  // 198.51.100/24 documentation
            (0xCB00_7100, 24),  // 203.0.113/24 documentation
            (0xE000_0000, 4),  // multicast
            (0xF000_0000, 4),  // reserved, broadcast
        ]
        return !blocked.contains { within($0.0, $0.1) }
    }
}
