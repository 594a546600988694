"""The file model: sandbox paths, opening and writing files safely, text and pictures, agent directories."""
