package httpapi

import "slices"

// OperationIDs lists, sorted, the operationIds of the document of a
// server with the services named mounted ("trash", "verify", "channel";
// "channel" mounts the event routes too), from the operation lists
// themselves: the tests that check what is served derive it from them.
func OperationIDs(services ...string) []string {
	var ops []operation
	for _, s := range services {
		switch s {
		case "trash":
			ops = append(ops, trashRoutes(nil)...)
		case "verify":
			ops = append(ops, verifyRoutes(nil)...)
		case "channel":
			ops = append(ops, channelRoutes(nil)...)
			ops = append(ops, eventRoutes(nil)...)
		default:
			panic("OperationIDs: no service " + s)
		}
	}
	ids := []string{"getOpenAPIDocument"}
	for _, o := range ops {
		ids = append(ids, o.id)
	}
	slices.Sort(ids)
	return ids
}
