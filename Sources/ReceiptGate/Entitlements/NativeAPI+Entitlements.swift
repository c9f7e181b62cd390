import Foundation
import ReceiptCore

/// What a player owns now, across the game's stores: signed like the other reads, answered from
/// the entitlement index (one index range, on the read standby while it is fresh enough).
extension NativeAPI {
    var entitlementRoute: Route {
        Route(
            "GET", "/v1/players/{player_id}/entitlements", authentication: .signedClient(.allow),
            rateLimits: [Self.perClient]
        ) { _, context in
            await playerEntitlements(context)
        }
    }

    private func playerEntitlements(_ context: RouteContext) async -> RouteResponse {
        await reading(context) { client in
            let player = context.pathParameters["player_id"] ?? ""
            let now = core.now()
            let owned = try await entitlements.owned(by: player, client: client, at: now)
            return .json(
                encoded: PlayerEntitlements(
                    playerID: player, entitlements: owned.map { NativeEntitlement($0, now: now) }
                ).encoded())
        }
    }
}
