"""mx.nd.image: operators registered as `_image_<name>`, under `<name>`."""
